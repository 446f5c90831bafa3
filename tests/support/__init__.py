"""Test support (not installed): a fault-injecting OpenAI-compatible server and its fake model."""

from .fake_openai import FAULT_KINDS, FakeConfig, FakeOpenAIServer, FakeStats

__all__ = ["FAULT_KINDS", "FakeConfig", "FakeOpenAIServer", "FakeStats"]
