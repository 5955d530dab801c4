"""torch_loop.py - a short PyTorch training loop whose GPU memory wsprof must see.

usage: python3 torch_loop.py RESULT_JSON [STEPS]

Trains a small convnet on random data on cuda:0 (default 30 steps, a few
hundred MB of activations) and writes one JSON object to RESULT_JSON:
torch.cuda.max_memory_reserved() and memory_reserved() at the end, the
versions, and wall times (import, loop, whole run). PyTorch's caching
allocator takes its segments with cudaMalloc and keeps them, so the traced
peak of cuda_device must equal max_memory_reserved. run.sh runs this plain
and under wsprof and compares; PYTORCH_CUDA_ALLOC_CONF must not ask for
expandable_segments (that maps memory with cuMemCreate/cuMemMap instead).
"""
import json
import os
import sys
import time

START = time.monotonic()


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    out_path = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) == 3 else 30

    import torch
    from torch import nn

    imported = time.monotonic()
    if not torch.cuda.is_available():
        print("torch_loop: torch.cuda.is_available() is False", file=sys.stderr)
        return 3
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)

    model = nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        nn.Flatten(), nn.Linear(256 * 4 * 4, 512), nn.ReLU(), nn.Linear(512, 10),
    ).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    loop_start = time.monotonic()
    losses = []
    for step in range(steps):
        x = torch.randn(64, 3, 64, 64, device=dev)
        y = torch.randint(0, 10, (64,), device=dev)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            losses.append(round(loss.item(), 4))
    torch.cuda.synchronize()
    loop_end = time.monotonic()

    result = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(0),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "steps": steps,
        "losses": losses,
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "memory_allocated": torch.cuda.memory_allocated(),
        "import_s": round(imported - START, 3),
        "loop_s": round(loop_end - loop_start, 3),
        "total_s": round(time.monotonic() - START, 3),
    }
    tmp = out_path + ".partial"
    with open(tmp, "w") as f:
        json.dump(result, f)
        f.write("\n")
    os.replace(tmp, out_path)
    print("torch_loop: %d steps in %.2f s, max reserved %d bytes, reserved %d bytes"
          % (steps, result["loop_s"], result["max_memory_reserved"], result["memory_reserved"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
