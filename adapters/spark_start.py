"""Spark's start-up without its chatter: before ``stickyflow batch`` says anything, Spark and the JVM print
about eight lines (the JVM's notice about an incubator module, log4j's default profile, the log level, a native
library not found, a loopback host name). :func:`log4j_file` is a log4j2 configuration that keeps warnings and
errors but not the notices; :func:`start_quietly` starts the JVM with its standard error piped through a filter
that drops only the one line no setting silences. Imports only the standard library (PySpark on first use).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Mapping

__all__ = ["log4j_file", "start_quietly"]

# Spark's own log4j2 defaults, less their start-up chatter: the root logger still prints warnings and errors,
# and only the native-Hadoop notice (a missing optional library that changes nothing here) is raised to ERROR.
# With a configuration of its own, Spark also stops announcing its default profile and log level.
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader
logger.nativecode.level = error
"""

# what the JVM prints before any logger exists, and that no setting silences: Spark's launcher always adds
# --add-modules=jdk.incubator.vector, and the JVM then warns that an incubator module is in use
_JVM_NOISE = (b"WARNING: Using incubator modules:",)


def log4j_file() -> str:
    """The path of :data:`_LOG4J2` written once into the temporary folder (named by its content)."""
    import hashlib
    import tempfile

    path = os.path.join(tempfile.gettempdir(),
                        f"stickyflow-log4j2-{hashlib.sha1(_LOG4J2.encode()).hexdigest()[:10]}.properties")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(_LOG4J2)
        os.replace(tmp, path)
    return path


def start_quietly(master: str, app_name: str, settings: Mapping[str, str]) -> None:
    """Start the JVM gateway with its standard error piped through a filter that drops :data:`_JVM_NOISE` and
    passes every other line on, unchanged, to this process's standard error; then the SparkContext on it. Does
    nothing where a gateway already runs (a second session of this process, a ``pyspark``/``spark-submit``
    driver), where PySpark no longer offers the hook, or when the start fails (the builder then starts Spark
    as usual, noise and all)."""
    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
    except ImportError:
        return
    if getattr(SparkContext, "_gateway", True) is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    import subprocess

    conf = SparkConf().setMaster(master).setAppName(app_name).setAll(list(settings.items()))
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    except Exception:  # noqa: BLE001 - quiet is a nicety: fall back to Spark's own start
        return
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stderr is not None:
        threading.Thread(target=_pass_stderr, args=(proc.stderr,), name="stickyflow-jvm-stderr", daemon=True).start()
    SparkContext(conf=conf, gateway=gateway)


def _pass_stderr(stream: Any) -> None:
    for line in iter(stream.readline, b""):
        if not line.startswith(_JVM_NOISE):
            try:
                os.write(2, line)
            except OSError:
                return
