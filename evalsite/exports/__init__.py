"""Streamed CSV / JSONL exports of runs and datasets (UI views and API)."""
