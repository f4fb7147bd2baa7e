/*
 * rsp-sidecar's streaming file source: the lines of the files that appear in a directory, read in a
 * deterministic order. Built and cached by cep/continuous/ordered.py (javac against the running
 * Spark's jars); read as spark.readStream.format("rspsidecar.OrderedFiles").load(DIRECTORY).
 *
 * Why: Spark's own file source orders new files by modification time and leaves ties in listing
 * order, which is arbitrary: with a watermark, files read out of order make their events late.
 *
 * The order: a file is given a position the first time a listing sees it; the files new in one
 * listing are positioned by (modification time, path relative to the directory). Positions are
 * written to a log under the source's checkpoint directory (ordered/) before Spark records an
 * offset that covers them, so a batch replayed after a restart reads the same files, and a file
 * is read exactly once. An offset is a count of positioned files. A file that appears later with
 * an older modification time is positioned after the files already positioned: it is read, and
 * whatever is late in it is the reader's to reject.
 *
 * Rows: value (the line, without its terminator; invalid UTF-8 byte sequences replaced by U+FFFD,
 * so every consumer can decode it and the parsers reject it as not UTF-8), file (the path; a
 * local file as a plain path, others as their URI) and line (1-based). Lines end at \n, \r\n or
 * \r; no empty line after a final terminator. Compressed files (.gz, .bz2, ... ) are read through
 * Hadoop's codecs, as Spark's text source reads them. Hidden files (a name starting with '.' or
 * '_', or ending with ._COPYING_) and hidden directories are skipped, as Spark's file source does.
 *
 * Options: path (the directory), maxFilesPerTrigger (files per micro-batch; Trigger.AvailableNow
 * reads what the first listing of the run found, in batches of that many files), logSegments
 * (the log's segments are merged into one after this many; default 64).
 */
package rspsidecar;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionCodecFactory;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxFiles;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

public final class OrderedFiles implements TableProvider {
    static final StructType SCHEMA = new StructType()
            .add("value", DataTypes.StringType, false)
            .add("file", DataTypes.StringType, false)
            .add("line", DataTypes.LongType, false);

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return SCHEMA;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        CaseInsensitiveStringMap options = new CaseInsensitiveStringMap(properties);
        String path = options.get("path");
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("rspsidecar.OrderedFiles: no directory given (load(DIRECTORY))");
        }
        return new FilesTable(path, positive(options, "maxFilesPerTrigger", 0), positive(options, "logSegments", 64));
    }

    private static int positive(CaseInsensitiveStringMap options, String name, int otherwise) {
        String text = options.getOrDefault(name, "");
        try {
            int value = text.isEmpty() ? otherwise : Integer.parseInt(text.trim());
            if (value >= 0) {
                return value;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException("rspsidecar.OrderedFiles: option " + name + " is " + text
                + "; expected a positive whole number");
    }

    static final class FilesTable implements Table, SupportsRead {
        private final String directory;
        private final int maxFiles;
        private final int mergeAfter;

        FilesTable(String directory, int maxFiles, int mergeAfter) {
            this.directory = directory;
            this.maxFiles = maxFiles;
            this.mergeAfter = mergeAfter;
        }

        @Override public String name() { return "ordered files " + directory; }
        @Override public StructType schema() { return SCHEMA; }
        @Override public Set<TableCapability> capabilities() { return EnumSet.of(TableCapability.MICRO_BATCH_READ); }

        @Override
        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return () -> new Scan() {
                @Override public StructType readSchema() { return SCHEMA; }
                @Override public String description() { return "OrderedFiles[" + directory + "]"; }
                @Override public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
                    return new FilesStream(directory, maxFiles, mergeAfter, checkpointLocation);
                }
            };
        }
    }

    /** An offset: how many files, in the log's order, are covered. */
    static final class FilesOffset extends Offset {
        private static final Pattern JSON = Pattern.compile("\\{\\s*\"files\"\\s*:\\s*(\\d+)\\s*\\}");
        final long files;

        FilesOffset(long files) { this.files = files; }

        @Override public String json() { return "{\"files\":" + files + "}"; }

        static FilesOffset parse(String json) {
            Matcher m = JSON.matcher(json.trim());
            if (!m.matches()) {
                if (json.contains("logOffset")) {
                    throw new IllegalArgumentException("rspsidecar.OrderedFiles: this checkpoint was written by Spark's "
                            + "own file source (offset " + json.trim() + "), which read files in another order; its "
                            + "offsets do not name this source's files: start a new checkpoint");
                }
                throw new IllegalArgumentException("rspsidecar.OrderedFiles: not an offset of this source: " + json);
            }
            return new FilesOffset(Long.parseLong(m.group(1)));
        }
    }

    /** One positioned file: its path (as a URI string), modification time and length. */
    static final class Entry {
        final String path;
        final long mtime;
        final long length;

        Entry(String path, long mtime, long length) {
            this.path = path;
            this.mtime = mtime;
            this.length = length;
        }
    }

    static final class FilesStream implements MicroBatchStream, SupportsTriggerAvailableNow {
        private static final Pattern SEGMENT = Pattern.compile("(\\d{20})(?:-(\\d{20}))?\\.files");

        private final Path root;
        private final int maxFiles;
        private final int mergeAfter;
        private final Path logDir;
        private final Configuration conf;
        private final List<Entry> files = new ArrayList<>();
        private final Set<String> seen = new HashSet<>();
        private int segments;          // segments written since the last merge
        private long availableNowEnd = -1;

        FilesStream(String directory, int maxFiles, int mergeAfter, String checkpointLocation) {
            this.conf = SparkContext.getOrCreate().hadoopConfiguration();
            this.root = new Path(directory);
            this.maxFiles = maxFiles;
            this.mergeAfter = mergeAfter;
            this.logDir = new Path(checkpointLocation, "ordered");
            try {
                load();
            } catch (IOException e) {
                throw new IllegalStateException("rspsidecar.OrderedFiles: cannot read the file log " + logDir + ": " + e, e);
            }
        }

        /** The log: segments named START.files (positions START.. on) and, after a merge,
         *  START-END.files (positions START..END-1); read from 0, each segment where the last ended. */
        private void load() throws IOException {
            FileSystem fs = logDir.getFileSystem(conf);
            if (!fs.exists(logDir)) {
                return;
            }
            TreeMap<Long, Path> single = new TreeMap<>();
            TreeMap<Long, Path> merged = new TreeMap<>();   // end -> segment from 0
            for (FileStatus status : fs.listStatus(logDir)) {
                Matcher m = SEGMENT.matcher(status.getPath().getName());
                if (!m.matches()) {
                    continue;   // a temporary file left by a crash: its positions were never offered
                }
                long start = Long.parseLong(m.group(1));
                if (m.group(2) != null && start == 0) {
                    merged.put(Long.parseLong(m.group(2)), status.getPath());
                } else if (m.group(2) == null) {
                    single.put(start, status.getPath());
                }
            }
            if (!merged.isEmpty()) {
                readSegment(fs, merged.lastEntry().getValue());
                if (files.size() != merged.lastKey()) {
                    throw new IOException("merged segment " + merged.lastEntry().getValue() + " holds " + files.size()
                            + " files, its name says " + merged.lastKey());
                }
            }
            while (single.containsKey((long) files.size())) {
                readSegment(fs, single.get((long) files.size()));
                segments++;
            }
            if (!single.isEmpty() && single.lastKey() >= files.size()) {
                throw new IOException("segment " + single.lastEntry().getValue() + " does not follow position " + files.size());
            }
        }

        private void readSegment(FileSystem fs, Path segment) throws IOException {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(fs.open(segment), StandardCharsets.UTF_8))) {
                String header = in.readLine();
                if (!"v1".equals(header)) {
                    throw new IOException(segment + ": not a segment of this source's log (header " + header + ")");
                }
                String line;
                while ((line = in.readLine()) != null) {
                    String[] parts = line.split("\t", 3);
                    if (parts.length != 3) {
                        throw new IOException(segment + ": malformed entry " + line);
                    }
                    Entry entry = new Entry(parts[2], Long.parseLong(parts[0]), Long.parseLong(parts[1]));
                    files.add(entry);
                    seen.add(entry.path);
                }
            }
        }

        private void writeSegment(FileSystem fs, Path target, List<Entry> entries) throws IOException {
            Path temp = new Path(logDir, "." + target.getName() + ".tmp");
            try (OutputStream out = fs.create(temp, true)) {
                StringBuilder text = new StringBuilder("v1\n");
                for (Entry e : entries) {
                    text.append(e.mtime).append('\t').append(e.length).append('\t').append(e.path).append('\n');
                }
                out.write(text.toString().getBytes(StandardCharsets.UTF_8));
            }
            if (!fs.rename(temp, target)) {
                throw new IOException("cannot rename " + temp + " to " + target);
            }
        }

        private static boolean hidden(String name) {
            return name.startsWith(".") || name.startsWith("_") || name.endsWith("._COPYING_");
        }

        /** List the directory, position the files it has not seen, and log them. */
        private synchronized void discover() {
            try {
                FileSystem fs = root.getFileSystem(conf);
                Path qualifiedRoot = fs.makeQualified(root);
                String rootText = qualifiedRoot.toUri().getPath();
                if (!fs.exists(qualifiedRoot)) {
                    return;
                }
                List<Object[]> found = new ArrayList<>();   // {relative path, status}
                RemoteIterator<LocatedFileStatus> it = fs.listFiles(qualifiedRoot, true);
                while (it.hasNext()) {
                    LocatedFileStatus status = it.next();
                    String full = status.getPath().toUri().getPath();
                    String relative = full.startsWith(rootText) ? full.substring(rootText.length()) : full;
                    boolean skip = false;
                    for (String part : relative.split("/")) {
                        if (!part.isEmpty() && hidden(part)) {
                            skip = true;
                            break;
                        }
                    }
                    String key = status.getPath().toUri().toString();
                    if (skip || seen.contains(key)) {
                        continue;
                    }
                    found.add(new Object[] {relative, status});
                }
                if (found.isEmpty()) {
                    return;
                }
                found.sort((a, b) -> {
                    long ta = ((FileStatus) a[1]).getModificationTime();
                    long tb = ((FileStatus) b[1]).getModificationTime();
                    return ta != tb ? Long.compare(ta, tb) : ((String) a[0]).compareTo((String) b[0]);
                });
                List<Entry> added = new ArrayList<>();
                for (Object[] f : found) {
                    FileStatus status = (FileStatus) f[1];
                    added.add(new Entry(status.getPath().toUri().toString(), status.getModificationTime(), status.getLen()));
                }
                FileSystem logFs = logDir.getFileSystem(conf);
                logFs.mkdirs(logDir);
                long start = files.size();
                writeSegment(logFs, new Path(logDir, String.format("%020d.files", start)), added);
                files.addAll(added);
                for (Entry e : added) {
                    seen.add(e.path);
                }
                if (++segments >= mergeAfter) {
                    merge(logFs);
                }
            } catch (IOException e) {
                throw new IllegalStateException("rspsidecar.OrderedFiles: cannot list " + root + " or log its files in "
                        + logDir + ": " + e, e);
            }
        }

        /** One segment for every position so far; the segments it replaces are deleted. */
        private void merge(FileSystem fs) throws IOException {
            long end = files.size();
            writeSegment(fs, new Path(logDir, String.format("%020d-%020d.files", 0L, end)), files);
            for (FileStatus status : fs.listStatus(logDir)) {
                Matcher m = SEGMENT.matcher(status.getPath().getName());
                if (m.matches() && (m.group(2) == null ? Long.parseLong(m.group(1)) < end : Long.parseLong(m.group(2)) < end)) {
                    fs.delete(status.getPath(), false);
                }
            }
            segments = 0;
        }

        @Override public Offset initialOffset() { return new FilesOffset(0); }
        @Override public Offset deserializeOffset(String json) { return FilesOffset.parse(json); }
        @Override public void commit(Offset end) { }
        @Override public void stop() { }

        @Override
        public Offset latestOffset() {
            throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used");
        }

        @Override
        public ReadLimit getDefaultReadLimit() {
            return maxFiles > 0 ? ReadLimit.maxFiles(maxFiles) : ReadLimit.allAvailable();
        }

        @Override
        public synchronized Offset latestOffset(Offset startOffset, ReadLimit limit) {
            if (availableNowEnd < 0) {
                discover();
            }
            long start = startOffset == null ? 0 : ((FilesOffset) startOffset).files;
            long end = availableNowEnd >= 0 ? Math.min(availableNowEnd, files.size()) : files.size();
            if (limit instanceof ReadMaxFiles) {
                end = Math.min(end, start + ((ReadMaxFiles) limit).maxFiles());
            }
            return new FilesOffset(Math.max(start, end));
        }

        @Override
        public synchronized void prepareForTriggerAvailableNow() {
            discover();
            availableNowEnd = files.size();
        }

        @Override
        public synchronized InputPartition[] planInputPartitions(Offset start, Offset end) {
            long from = ((FilesOffset) start).files;
            long to = ((FilesOffset) end).files;
            if (to > files.size()) {
                throw new IllegalStateException("rspsidecar.OrderedFiles: offset " + to + " is past the " + files.size()
                        + " files in the log " + logDir + " (was the log deleted from the checkpoint?)");
            }
            // consecutive files packed into tasks of about total / parallelism bytes (4 MB to
            // 128 MB), as Spark's file source packs small files: a batch of many small files is not
            // a task per file
            long total = 0;
            for (long i = from; i < to; i++) {
                total += files.get((int) i).length;
            }
            int parallelism = Math.max(1, SparkContext.getOrCreate().defaultParallelism());
            long target = Math.min(128L << 20, Math.max(4L << 20, total / parallelism));
            List<InputPartition> parts = new ArrayList<>();
            List<String> group = new ArrayList<>();
            long size = 0;
            for (long i = from; i < to; i++) {
                Entry entry = files.get((int) i);
                if (!group.isEmpty() && size + entry.length > target) {
                    parts.add(new FilePartition(group.toArray(new String[0])));
                    group.clear();
                    size = 0;
                }
                group.add(entry.path);
                size += entry.length;
            }
            if (!group.isEmpty()) {
                parts.add(new FilePartition(group.toArray(new String[0])));
            }
            return parts.toArray(new InputPartition[0]);
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
            Map<String, String> settings = new HashMap<>();
            for (Map.Entry<String, String> e : conf) {
                settings.put(e.getKey(), e.getValue());
            }
            return new LineReaderFactory(settings);
        }

        @Override
        public String toString() {
            return "OrderedFiles[" + root + "]";
        }
    }

    /** Files read one after the other by one task. */
    static final class FilePartition implements InputPartition {
        final String[] paths;

        FilePartition(String[] paths) { this.paths = paths; }
    }

    static final class LineReaderFactory implements PartitionReaderFactory {
        private final Map<String, String> settings;

        LineReaderFactory(Map<String, String> settings) { this.settings = settings; }

        @Override
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            Configuration conf = new Configuration(false);
            for (Map.Entry<String, String> e : settings.entrySet()) {
                conf.set(e.getKey(), e.getValue());
            }
            return new FilesReader(((FilePartition) partition).paths, conf);
        }
    }

    /** The lines of several files, one file after the other. */
    static final class FilesReader implements PartitionReader<InternalRow> {
        private final String[] paths;
        private final Configuration conf;
        private int next;
        private LineReader current;

        FilesReader(String[] paths, Configuration conf) {
            this.paths = paths;
            this.conf = conf;
        }

        @Override
        public boolean next() throws IOException {
            while (true) {
                if (current != null && current.next()) {
                    return true;
                }
                if (current != null) {
                    current.close();
                    current = null;
                }
                if (next >= paths.length) {
                    return false;
                }
                String path = paths[next++];
                try {
                    current = new LineReader(new Path(new java.net.URI(path)), conf);
                } catch (java.net.URISyntaxException e) {
                    throw new IOException("rspsidecar.OrderedFiles: not a file URI in the log: " + path, e);
                }
            }
        }

        @Override
        public InternalRow get() {
            return current.get();
        }

        @Override
        public void close() throws IOException {
            if (current != null) {
                current.close();
            }
        }
    }

    /** A file's lines, split at \n, \r\n or \r, numbered from 1. */
    static final class LineReader implements PartitionReader<InternalRow> {
        private final InputStream in;
        private final UTF8String file;
        private byte[] buffer = new byte[1 << 16];
        private int pos;
        private int limit;
        private boolean eof;
        private byte[] line = new byte[1 << 12];
        private long number;
        private InternalRow row;

        LineReader(Path path, Configuration conf) throws IOException {
            FileSystem fs = path.getFileSystem(conf);
            InputStream raw = fs.open(path);
            CompressionCodec codec = new CompressionCodecFactory(conf).getCodec(path);
            this.in = codec == null ? raw : codec.createInputStream(raw);
            String scheme = path.toUri().getScheme();
            this.file = UTF8String.fromString(scheme == null || scheme.equals("file") ? path.toUri().getPath() : path.toString());
        }

        private boolean fill() throws IOException {
            pos = limit = 0;
            while (!eof) {
                int n = in.read(buffer, 0, buffer.length);
                if (n < 0) {
                    eof = true;
                } else if (n > 0) {
                    limit = n;
                    return true;
                }
            }
            return false;
        }

        @Override
        public boolean next() throws IOException {
            int length = 0;
            boolean any = false;
            while (true) {
                if (pos >= limit && !fill()) {
                    if (!any) {
                        return false;
                    }
                    break;
                }
                any = true;
                int start = pos;
                while (pos < limit && buffer[pos] != '\n' && buffer[pos] != '\r') {
                    pos++;
                }
                int chunk = pos - start;
                if (length + chunk > line.length) {
                    byte[] bigger = new byte[Math.max(line.length * 2, length + chunk)];
                    System.arraycopy(line, 0, bigger, 0, length);
                    line = bigger;
                }
                System.arraycopy(buffer, start, line, length, chunk);
                length += chunk;
                if (pos < limit) {
                    byte terminator = buffer[pos++];
                    if (terminator == '\r' && (pos < limit || fill()) && buffer[pos] == '\n') {
                        pos++;
                    }
                    break;
                }
            }
            UTF8String value = UTF8String.fromBytes(line, 0, length);
            if (!value.isValid()) {
                value = value.makeValid();
            } else {
                value = value.copy();
            }
            number++;
            row = new GenericInternalRow(new Object[] {value, file, number});
            return true;
        }

        @Override
        public InternalRow get() {
            return row;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
