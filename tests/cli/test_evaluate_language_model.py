"""`paragrad evaluate CKPT` of a language model: its val loss over seeded windows, the same the
run printed last when --eval-iters is the run's."""
from tests.cli.helpers import lm_records, refused, run


def _val_loss(out):
    return float(out.split("val loss ")[1].split()[0])


def test_evaluate_prints_the_val_loss_of_the_run(shakespeare_run, capsys):
    ckpt = shakespeare_run / "ckpt.safetensors"
    capsys.readouterr()
    assert run("evaluate", ckpt) == 0
    out = capsys.readouterr().out
    assert "over 2 batches of 4x16 shakespeare tokens" in out
    assert _val_loss(out) == round(lm_records(shakespeare_run)[-1]["val_loss"], 4)
    assert run("evaluate", ckpt, "--eval-iters", "5") == 0
    assert "over 5 batches" in capsys.readouterr().out


def test_evaluate_refuses_a_language_model_without_its_tokenizer(shakespeare_run, tmp_path, capsys):
    for name in ("ckpt.safetensors", "ckpt.safetensors.train.safetensors"):
        (tmp_path / name).write_bytes((shakespeare_run / name).read_bytes())
    capsys.readouterr()
    assert run("evaluate", tmp_path / "ckpt.safetensors") == 2
    assert "tokenizer.json" in capsys.readouterr().err


def test_evaluate_refuses_the_flags_of_the_other_kind_of_checkpoint(shakespeare_run, capsys):
    refused(capsys, "evaluate", shakespeare_run / "ckpt.safetensors", "--limit", "10",
            naming=["--limit", "language model"])
