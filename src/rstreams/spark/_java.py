"""Is a Java runtime that PySpark 4 can use (17 or newer) installed? Say exactly what to do if not."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from rstreams.errors import ReactiveStreamsError

__all__ = ["MIN_JAVA", "JavaMissingError", "check_java"]

MIN_JAVA = 17
"""Spark 4 runs on Java 17 and 21."""

_HOW = (
    "install Java 17 or newer: on Debian/Ubuntu `sudo apt-get install openjdk-17-jre-headless`, "
    "on macOS `brew install openjdk@17`; or set JAVA_HOME to an existing Java 17+ installation"
)


class JavaMissingError(ReactiveStreamsError, RuntimeError):
    """No usable Java (17+) was found; the message says what to install."""


def check_java() -> int:
    """The major version of the Java that Spark will use (``JAVA_HOME`` first, then ``PATH``).

    Raises:
        JavaMissingError: no Java, or one older than :data:`MIN_JAVA`.
    """
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    where = f"JAVA_HOME={home}" if home else "PATH"
    if not java or not os.path.exists(java):
        raise JavaMissingError(f"Spark needs Java, and none was found on {where}; {_HOW}")
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as error:
        raise JavaMissingError(f"{java} could not be run ({error}); {_HOW}") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if match is None:
        raise JavaMissingError(f"could not tell the version of {java}; {_HOW}")
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0" is Java 8
        major = int(match.group(2))
    if major < MIN_JAVA:
        raise JavaMissingError(f"Spark needs Java {MIN_JAVA}+, but {java} is Java {major}; {_HOW}")
    return major
