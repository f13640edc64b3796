"""The demo's ``SensorSource`` under the TCK (no Spark session: only its producer thread)."""

from __future__ import annotations

from typing import Any

from rstreams.api import Publisher
from rstreams.spark._demo import SensorSource
from rstreams.tck import PublisherVerification, TestEnvironment

MAX = 2**63 - 1


class TestSensorSource(PublisherVerification):
    def create_publisher(self, elements: int) -> Publisher[Any]:
        source = SensorSource(sensors=3)
        return source if elements == MAX else source.take(elements)

    def max_elements_from_publisher(self) -> int:
        return MAX  # endless; bounded streams are the endless one cut by take()

    def create_failed_publisher(self) -> None:
        return None  # simulated sensors cannot fail

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(default_timeout=2.0, default_no_signals_timeout=0.05)
