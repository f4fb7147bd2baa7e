"""Test and development infrastructure, not jobs: Hadoop's mini cluster (HDFS and YARN on loopback,
``hadoop_cluster`` with ``MiniClusters.java``), a local Kafka broker (``kafka_broker``) and a Spark
standalone cluster (``standalone_cluster``)."""
