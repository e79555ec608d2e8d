"""tests/bench/RESULTS.md is one file of sections ("## Preprocessing", "## Training",
"## Featurizing"), each written by its bench script: replace_section swaps in one
section and leaves the others, and the lines above the first section (HEADER), as they
are; machine() is how each names the machine. Nothing in the file is written by hand: the
analysis of its figures is the dated notes of docs/experiments/."""
import os
import re


# The file's title and the line that points to the analysis; written when the file is created.
HEADER = ("# Benchmarks\n\n"
          "Every section below is written by its bench script in `tests/bench/` (the section says which); "
          "nothing here is written by hand. What the figures mean, and the experiments behind the defaults, "
          "are the dated notes in [docs/experiments/](../../docs/experiments/README.md).\n\n")


def replace_section(results, title, section):
    """Replaces the section headed '## <title>' of the file (up to the next '## ' heading),
    or appends it; creates the file when missing."""
    text = open(results).read() if os.path.exists(results) else HEADER
    m = re.search(r"^## %s\n.*?(?=^## |\Z)" % re.escape(title), text, flags=re.S | re.M)
    text = text[:m.start()] + section + "\n" + text[m.end():] if m else text.rstrip("\n") + "\n\n" + section
    with open(results, "w") as f:
        f.write(text.rstrip("\n") + "\n")


def subsection(results, title):
    """The text of the subsection headed '### <title>' of the file (up to the next '## ' or
    '### ' heading, without its trailing blank lines), or None when the file or it is missing."""
    if not os.path.exists(results):
        return None
    m = re.search(r"^### %s\n.*?(?=^##|\Z)" % re.escape(title), open(results).read(), flags=re.S | re.M)
    return m.group(0).rstrip("\n") if m else None


def machine():
    """'2 cores (nproc), AMD EPYC (family 26, model 2; AVX-512, AVX2), 23.5 GiB memory': the
    family and model tell CPU generations apart that share a model name (a VM's "AMD EPYC"
    was a Zen 4 one day and a Zen 5 another, whose AVX-512 units are twice as wide), and
    the vector extensions say which of the kernels' paths the CPU can run."""
    info = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "cpu family", "model", "flags") and key not in info:
            info[key] = value.strip()
        if not line.strip() and info:
            break
    flags = set(info.get("flags", "").split())
    isa = ", ".join(name for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags) or "no AVX2"
    cpu = f"{info.get('model name', '?')} (family {info.get('cpu family', '?')}, model {info.get('model', '?')}; {isa})"
    mem_gib = int(open("/proc/meminfo").readline().split()[1]) / 1024 / 1024
    return f"{os.cpu_count()} cores (nproc), {cpu}, {mem_gib:.1f} GiB memory"


def schema_default(help_config, key):
    """A key's default as `tpuperf-train --help-config` prints it ("?" when it has no such key)."""
    m = re.search(r"^ *%s \([a-z]+, default ([^)]*)\)$" % re.escape(key), help_config, flags=re.M)
    return m.group(1) if m else "?"


def collection_floor(help_config, collection):
    """A collection's default floor on the steps of a one-pass epoch: its own in the default
    collections: section (listed by --help-config as "<id>: train.min_steps_per_epoch: N"),
    else train.min_steps_per_epoch."""
    m = re.search(r"^ +%s: train\.min_steps_per_epoch: (\S+)$" % re.escape(collection), help_config, flags=re.M)
    return m.group(1) if m else schema_default(help_config, "train.min_steps_per_epoch")
