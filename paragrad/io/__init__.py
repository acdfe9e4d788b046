"""Saving and loading: pg.save / pg.load (serialization), safetensors files (safetensors),
checkpoints of a training run (checkpoint), the data-only unpickler behind weights_only=True
(safe_unpickler) and the atomic file write they share (atomic_write)."""
