"""paragrad.data.data_root: where datasets live (an explicit root, $PARAGRAD_DATA, then the cache)."""
from paragrad.data import data_root


def test_data_root_resolution(monkeypatch, tmp_path):
    assert data_root(tmp_path) == tmp_path
    monkeypatch.setenv("PARAGRAD_DATA", str(tmp_path / "x"))
    assert data_root() == tmp_path / "x"
    monkeypatch.delenv("PARAGRAD_DATA")
    assert str(data_root()).endswith(".cache/paragrad")
