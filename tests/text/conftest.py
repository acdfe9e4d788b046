"""Every test here keeps the token cache ($PARAGRAD_CACHE) in its own tmp_path: none writes into
the user's ~/.cache/paragrad or beside the shared corpora."""
import pytest


@pytest.fixture(autouse=True)
def _own_token_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PARAGRAD_CACHE", str(tmp_path / "paragrad-cache"))
