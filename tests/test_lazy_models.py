"""`import paragrad as pg; pg.models.GPT(...)` works without `import paragrad.models` (the
package imports it on first use), in a fresh interpreter where nothing imported it first."""
import subprocess
import sys

CODE = """
import sys
import paragrad as pg
assert "paragrad.models" not in sys.modules, "pg.models is imported lazily, not at start-up"
cfg = pg.models.GPTConfig(block_size=8, vocab_size=11, n_layer=1, n_head=2, n_embd=8)
model = pg.models.GPT(cfg)
assert pg.models is sys.modules["paragrad.models"]
try:
    pg.no_such_name
except AttributeError as e:
    assert "no_such_name" in str(e)
else:
    raise AssertionError("an unknown attribute must raise AttributeError")
print("ok")
"""


def test_models_available_after_import_paragrad():
    run = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"
