"""Test support (not installed): a fault-injecting OpenAI-compatible server and its fake model."""

import sys

from .fake_openai import FAULT_KINDS, FakeConfig, FakeOpenAIServer, FakeStats

CLI = (sys.executable, "-m", "socbench.cli")  # the `socbench` command, as a subprocess of the tests

__all__ = ["CLI", "FAULT_KINDS", "FakeConfig", "FakeOpenAIServer", "FakeStats"]
