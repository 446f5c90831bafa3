"""Test helpers that ship with socbench: a fault-injecting OpenAI-compatible server."""

from socbench.testing.fake_openai import FAULT_KINDS, FakeConfig, FakeOpenAIServer, FakeStats

__all__ = ["FAULT_KINDS", "FakeConfig", "FakeOpenAIServer", "FakeStats"]
