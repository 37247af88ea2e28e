"""Parsers for the agent JSONL formats azsd ingests (spec/agent-formats.md)."""
