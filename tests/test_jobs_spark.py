"""The session helpers of ``jobs.spark`` that need no JVM."""
import io

from jobs.spark import copy_without_noise


def test_the_jvm_stderr_filter_drops_the_stateful_workers_prints_and_keeps_errors():
    # what a keyed run's JVM copies to its stderr: PySpark's driver-side worker of
    # transformWithStateInPandas prints each line with an empty line after it
    noise = (b"WARNING: Using incubator modules: jdk.incubator.vector\n"
             b"Starting Streaming TransformWithStateInPandas Python worker.\n\n"
             b"Streaming TransformWithStateInPandas Python worker received parameters for UDF. State server port: 1\n\n"
             b"Streaming TransformWithStateInPandas Python worker Completed execution of UDF: <function f>.\n\n")
    kept = b"ERROR Executor: Exception in task 0.0\n\njava.lang.OutOfMemoryError: Java heap space\n"
    target = io.BytesIO()
    copy_without_noise(io.BytesIO(noise + kept + noise), target)
    assert target.getvalue() == kept
