import os, sys, numpy as np, torch, torch.nn as nn, torch.nn.functional as F
from torch_mlir import fx
from torch_mlir.compiler_utils import OutputType
OUT = os.path.dirname(os.path.abspath(__file__))  # beside this script
torch.manual_seed(0)

class MLP(nn.Module):
    def __init__(s):
        super().__init__(); s.fc1 = nn.Linear(64, 128); s.fc2 = nn.Linear(128, 32)
    def forward(s, x): return s.fc2(torch.relu(s.fc1(x)))

def randomize_bn(bn):
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5); bn.running_var.uniform_(0.5, 1.5)
        bn.weight.uniform_(0.5, 1.5); bn.bias.uniform_(-0.5, 0.5)

class ResBlock(nn.Module):
    def __init__(s, c=16):
        super().__init__()
        s.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False); s.bn1 = nn.BatchNorm2d(c)
        s.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False); s.bn2 = nn.BatchNorm2d(c)
        randomize_bn(s.bn1); randomize_bn(s.bn2)
    def forward(s, x):
        y = torch.relu(s.bn1(s.conv1(x)))
        y = s.bn2(s.conv2(y))
        return torch.relu(y + x)

class InvRes(nn.Module):
    def __init__(s, c=8, e=4):
        super().__init__(); h = c * e
        s.expand = nn.Conv2d(c, h, 1, bias=False); s.bn1 = nn.BatchNorm2d(h)
        s.dw = nn.Conv2d(h, h, 3, padding=1, groups=h, bias=False); s.bn2 = nn.BatchNorm2d(h)
        s.project = nn.Conv2d(h, c, 1, bias=False); s.bn3 = nn.BatchNorm2d(c)
        for b in (s.bn1, s.bn2, s.bn3): randomize_bn(b)
    def forward(s, x):
        y = F.relu6(s.bn1(s.expand(x)))
        y = F.relu6(s.bn2(s.dw(y)))
        y = s.bn3(s.project(y))
        return x + y

class Attention(nn.Module):
    def __init__(s, d=32):
        super().__init__(); s.q = nn.Linear(d, d); s.k = nn.Linear(d, d); s.v = nn.Linear(d, d); s.scale = d ** -0.5
    def forward(s, x):  # x: 1 x seq x dim
        q, k, v = s.q(x), s.k(x), s.v(x)
        a = torch.bmm(q, k.transpose(1, 2)) * s.scale
        return torch.bmm(torch.softmax(a, dim=-1), v)

class LNGelu(nn.Module):
    def __init__(s):
        super().__init__(); s.ln = nn.LayerNorm(64)
        with torch.no_grad(): s.ln.weight.uniform_(0.5, 1.5); s.ln.bias.uniform_(-0.5, 0.5)
    def forward(s, x): return F.gelu(s.ln(x))

class Pool(nn.Module):
    def __init__(s):
        super().__init__(); s.p = nn.MaxPool2d(2)
    def forward(s, x): return s.p(x)

class Stem(nn.Module):
    """ResNet-style pooling stem: strided conv, batch norm, ReLU, padded strided max pooling."""
    def __init__(s):
        super().__init__(); s.conv = nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False); s.bn = nn.BatchNorm2d(16)
        s.pool = nn.MaxPool2d(3, stride=2, padding=1); randomize_bn(s.bn)
    def forward(s, x): return s.pool(torch.relu(s.bn(s.conv(x))))

cases = [("mlp", MLP(), (1, 64)), ("resnet_block", ResBlock(), (1, 16, 16, 16)),
         ("mobilenet_block", InvRes(), (1, 8, 16, 16)), ("attention", Attention(), (1, 16, 32)),
         ("layernorm_gelu", LNGelu(), (16, 64)), ("maxpool", Pool(), (1, 8, 16, 16)),
         ("pool_stem", Stem(), (1, 3, 32, 32))]
only = sys.argv[1:]
for name, m, shp in cases:
    if only and name not in only: continue
    m.eval()
    x = torch.randn(*shp)
    with torch.no_grad():
        y = m(x)
    mod = fx.export_and_import(m, x, output_type=OutputType.LINALG_ON_TENSORS, func_name="forward")
    text = str(mod)
    open(f"{OUT}/{name}.mlir", "w").write(text)
    np.save(f"{OUT}/{name}_input.npy", x.numpy()); np.save(f"{OUT}/{name}_output.npy", y.numpy())
    print(f"{name}: {len(text)} chars, in {tuple(x.shape)} out {tuple(y.shape)}")
