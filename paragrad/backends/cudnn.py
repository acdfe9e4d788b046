"""pg.backends.cudnn: switches for the CUDA backend's cuDNN convolutions, as PyTorch's
torch.backends.cudnn. This module imports neither CuPy nor cuDNN, so the switch can be set on
any machine; backends/cuda/cudnn_frontend.py reads it whenever it plans a convolution geometry.

benchmark: when True, the first time a convolution geometry (shapes, dtype, stride, padding,
dilation, TF32 setting) is planned, a plan for every cuDNN engine that can run it (bar the ones
cuDNN would compile with NVRTC) is timed once on the GPU, on scratch buffers, and the fastest
is kept; when False (the default, as PyTorch's) the heuristic's first choice runs. The timing synchronizes with the device, so it never happens
while pg.jit captures a step (the eager warm-up before a capture plans and times instead).
"""

benchmark = False
