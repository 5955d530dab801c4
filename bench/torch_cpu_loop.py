"""torch_cpu_loop.py - a CPU PyTorch training loop of a small MLP, the
program issue 18 measured symbolization on (bench/symbols.sh records it).

usage: /usr/bin/python3 torch_cpu_loop.py [STEPS]   (default 20)

Debian's python3-torch (the CPU build): forward, backward and an SGD step
of a 512-1024-1024-10 MLP on a random batch of 128, STEPS times.
"""
import sys
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(2)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                            torch.nn.ReLU(), torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(128, 512)
y = torch.randint(0, 10, (128,))
start = time.time()
for step in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("loss %.4f in %.2f s" % (loss.item(), time.time() - start))
