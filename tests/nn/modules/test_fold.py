"""Unfold and Fold, with PixelShuffle / PixelUnshuffle and ChannelShuffle, the parameter-free
reshaping modules, against torch.nn: reprs, empty state and values."""
import numpy as np
import torch

import paragrad as pg


def test_shape_modules(device):
    x = pg.randn(2, 8, 4, 6, device=device)
    for pm, tm in [(pg.nn.Unfold(2), torch.nn.Unfold(2)),
                   (pg.nn.Fold((4, 4), 2), torch.nn.Fold((4, 4), 2)),
                   (pg.nn.PixelShuffle(2), torch.nn.PixelShuffle(2)),
                   (pg.nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2)),
                   (pg.nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2))]:
        assert repr(pm) == repr(tm)
        assert not pm.state_dict()
    t = torch.tensor(x.cpu().numpy())
    for pm, tm, inp in [(pg.nn.PixelShuffle(2), torch.nn.PixelShuffle(2), x),
                        (pg.nn.PixelUnshuffle(2), torch.nn.PixelUnshuffle(2), x),
                        (pg.nn.ChannelShuffle(4), torch.nn.ChannelShuffle(4), x),
                        (pg.nn.Unfold(3, padding=1), torch.nn.Unfold(3, padding=1), x)]:
        np.testing.assert_array_equal(pm(inp).cpu().numpy(), tm(t).numpy())
    cols = pg.randn(2, 12, 9, device=device)
    np.testing.assert_allclose(pg.nn.Fold((4, 4), 2)(cols).cpu().numpy(),
                               torch.nn.Fold((4, 4), 2)(torch.tensor(cols.cpu().numpy())).numpy(), atol=1e-6)
