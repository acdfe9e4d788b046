"""torch.onnx under `paragrad run`: importable, because scripts import it at the top for an
optional export (pytorch/examples' word_language_model does), but empty: every torch.onnx.X a
script uses fails naming it."""
