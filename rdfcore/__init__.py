"""What every part of the project shares: RDF terms and their 64-bit ids (``hashing``, ``terms``,
``vocab``), the dictionary (``dictionary``), table and column names (``schema``), reading RDF
sources (``loading``), files on any Hadoop filesystem (``fs``, ``locations``), the one base error
(``errors``), Spark helpers (``sparkutil``), JVM jars from Maven Central (``jars``), compiled byte
kernels (``bytekernels``), package resources and progress lines. It imports nothing else of the
project."""
