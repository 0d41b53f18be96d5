"""agent.torch_passes: a transposed convolution and its sub-pixel form compute the same thing, for the shapes
models use (stride 2 with kernel 2, 3 and 4, output padding, stride 1, a kernel smaller than the stride)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("k,s,p,op", [(2, 2, 0, 0), (3, 2, 1, 1), (4, 2, 1, 0), (3, 1, 1, 0), (5, 3, 2, 2),
                                      (2, 3, 0, 0), (4, 4, 0, 3)])
def test_subpixel_form_equals_the_transposed_convolution(dims, k, s, p, op):
    from torch import nn

    from mlir_rl_tui.agent.torch_passes import subpixel_transposed_convs

    torch.manual_seed(0)
    cls = nn.ConvTranspose1d if dims == 1 else nn.ConvTranspose2d
    model = nn.Sequential(cls(6, 5, k, stride=s, padding=p, output_padding=op), nn.ReLU()).eval()
    x = torch.randn(2, 6, 7) if dims == 1 else torch.randn(2, 6, 7, 5)
    want = model(x)
    rewritten, n = subpixel_transposed_convs(model)
    assert n == 1 and isinstance(model[0], cls)  # the caller's module is left as it was
    got = rewritten(x)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_grouped_or_dilated_transposed_convolutions_are_left_alone():
    from torch import nn

    from mlir_rl_tui.agent.torch_passes import subpixel_transposed_convs

    for m in (nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2), nn.ConvTranspose2d(4, 4, 3, stride=2, dilation=2)):
        assert subpixel_transposed_convs(nn.Sequential(m))[1] == 0
