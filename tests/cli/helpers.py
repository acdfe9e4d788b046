"""Running the command line in-process on small slices of the real MNIST."""
from paragrad.cli import main
from tests.data_paths import mnist_root


def run(*argv):
    """main's exit code (refusals by the parser leave through SystemExit)."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:
        return e.code


def refused(capsys, *argv, naming=()):
    """Run argv, which must be refused: exit code 2 and one line `paragrad <command>: error: ...`
    naming each of `naming`. Returns that line."""
    capsys.readouterr()         # what ran before
    rc = run(*argv)
    err = capsys.readouterr().err
    assert rc == 2, (argv, rc, err)
    assert err.startswith(f"paragrad {argv[0]}: error: ") and err.count("\n") == 1, err
    for word in naming:
        assert str(word) in err, (word, err)
    return err


def train_mnist(out, *extra):
    """A 500-image MLP run (10 steps an epoch); `out` None leaves --out to its default."""
    where = [] if out is None else ["--out", out]
    return run("train", "mnist", "--data-dir", mnist_root(), *where, "--limit", "500", "--hidden", "32",
               "--batch-size", "50", *extra)
