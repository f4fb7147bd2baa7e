// Hadoop's mini clusters in one JVM, for devcluster/hadoop_cluster.py: HDFS (a namenode and one datanode)
// and, with --yarn, YARN (a resource manager and one node manager). Run in source-file mode
// (java -cp JARS MiniClusters.java ...: no build step) with hadoop-client-minicluster and PySpark's
// Hadoop client jars on the class path. Writes the clients' configuration to --config once every
// service is up, then runs until killed.
//
//   java -cp ... MiniClusters.java --dir D --nn-port P --config D/cluster.xml [--yarn]

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public class MiniClusters {
    public static void main(String[] args) throws Exception {
        String dir = null, config = null;
        int nnPort = 0;
        boolean yarn = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--dir": dir = args[++i]; break;
                case "--nn-port": nnPort = Integer.parseInt(args[++i]); break;
                case "--config": config = args[++i]; break;
                case "--yarn": yarn = true; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (dir == null || config == null) {
            throw new IllegalArgumentException("usage: --dir DIR --config FILE [--nn-port P] [--yarn]");
        }
        YarnConfiguration conf = new YarnConfiguration(new Configuration());
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(dir, "hdfs").getAbsolutePath());
        conf.setBoolean("dfs.permissions.enabled", false);
        // one datanode: files with the default replication of 3 could not be appended to (the
        // client would look for a second datanode to recover the pipeline)
        conf.setInt("dfs.replication", 1);
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf).nameNodePort(nnPort).numDataNodes(1)
                .format(true).build();
        dfs.waitActive();
        conf.set("fs.defaultFS", dfs.getFileSystem().getUri().toString());
        MiniYARNCluster cluster = null;
        if (yarn) {
            // containers of a laptop-sized cluster: a Spark driver or executor fits one each
            conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
            conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 4096);
            conf.setInt(YarnConfiguration.NM_PMEM_MB, 6144);
            conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
            conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
            conf.set("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "99.5");
            conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, false);
            conf.set(YarnConfiguration.RM_SCHEDULER,       // one queue, no capacity-scheduler.xml needed
                     "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
            cluster = new MiniYARNCluster("rsp-sidecar", 1, 1, 1);
            cluster.init(conf);
            cluster.start();
            conf = new YarnConfiguration(cluster.getConfig());
            conf.set("fs.defaultFS", dfs.getFileSystem().getUri().toString());
        }
        // the mini cluster's own test-only rack mapping: clients (a Spark driver in a container) lack it
        conf.unset("net.topology.node.switch.mapping.impl");
        File target = new File(config);
        File partial = new File(config + ".part");
        try (OutputStream out = new FileOutputStream(partial)) {
            conf.writeXml(out);
        }
        if (!partial.renameTo(target)) {
            throw new IllegalStateException("cannot write " + target);
        }
        System.out.println("up: " + conf.get("fs.defaultFS")
                + (yarn ? " yarn " + conf.get(YarnConfiguration.RM_ADDRESS) : ""));
        final MiniYARNCluster started = cluster;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (started != null) started.stop();
            dfs.shutdown();
        }));
        Thread.currentThread().join();
    }
}
