"""What `from torch.utils.tensorboard import SummaryWriter` gives under `paragrad run`: a writer
whose calls do nothing, so a script that logs to TensorBoard still trains. paragrad writes no
event files; the finder prints a one-line notice the first time a script imports this."""


class SummaryWriter:
    """torch.utils.tensorboard.SummaryWriter's methods, each doing nothing.

    Only the methods PyTorch's writer has are here: anything else fails as it would in torch,
    and get_logdir is left out because there is no log folder to name."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        pass

    def _nothing(self, *args, **kwargs):
        return None

    add_scalar = add_scalars = add_tensor = add_histogram = add_histogram_raw = _nothing
    add_image = add_images = add_image_with_boxes = add_figure = add_video = add_audio = _nothing
    add_text = add_onnx_graph = add_graph = add_embedding = add_pr_curve = add_pr_curve_raw = _nothing
    add_custom_scalars = add_custom_scalars_multilinechart = add_custom_scalars_marginchart = _nothing
    add_mesh = add_hparams = flush = close = _nothing

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
