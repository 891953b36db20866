#!/usr/bin/env python3
"""Black-box mutation campaign against the skelett CLI (Python 3 standard library only).

Seeds are the asset files under the shared data folder plus a few files skelett itself writes
at start (.skl, .ram + .raa, .glb). Every mutant is one seed with one or two deterministic
mutations (truncation, byte flips, integer overwrites, zeroed or duplicated ranges, and for text
formats token-level breakage). Each mutant is run through `skelett inspect` and `skelett convert`
to .skl, .ram and .glb under a memory limit and a timeout; every output written with exit 0 is
loaded again with `skelett inspect`. Every run is classified (see README.md), a summary is
printed and the findings are saved with their mutant so that they can be replayed.

    python3 scripts/hostile/campaign.py --seed 1 --count 60 --jobs 1 --out /tmp/hostile.json

Mutant N of seed S is a pure function of (S, N, the seed files), so any mutant can be rebuilt
alone with `--seed S --first N --count 1` (the findings folder keeps a copy anyway).
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
DEFAULT_BIN = os.path.join(REPO, "target", "release", "skelett")
DEFAULT_DATA = os.environ.get("SKELETT_DATA", os.path.normpath(os.path.join(REPO, "..", "shared", "data")))

SEED_EXTS = {".glb", ".gltf", ".fbx", ".bvh", ".x", ".ram"}

# Outcome classes, from the most to the least severe (a run gets exactly one).
TIMEOUT = "timeout"
SIGNAL = "abort_signal"
PANIC = "panic"
AMPLIFICATION = "amplification"
REFUSED = "own_output_refused"
BAD_JSON = "bad_json"
MESSAGE = "message_problem"
CLEAN = "clean_error"
OK = "ok"
CLASSES = [TIMEOUT, SIGNAL, PANIC, AMPLIFICATION, REFUSED, BAD_JSON, MESSAGE, CLEAN, OK]
BENIGN = {OK, CLEAN}

# The commands run on every mutant: name -> (kind, output extension or None).
COMMANDS = {
    "inspect": ("inspect", None),
    "convert-skl": ("convert", ".skl"),
    "convert-ram": ("convert", ".ram"),
    "convert-glb": ("convert", ".glb"),
    "inspect-json": ("inspect-json", None),  # opt-in: stdout must be strict JSON
}
DEFAULT_COMMANDS = "inspect,convert-skl,convert-ram,convert-glb"

HUGE_NUMBERS = [b"1e30", b"-2e8", b"4294967295", b"99999999999", b"2147483648", b"-1", b"0", b"1e-45"]
NON_FINITE = [b"nan", b"inf", b"-inf", b"NaN"]
NUM_RE = re.compile(rb"(?<![A-Za-z0-9_.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
WORD_RE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]{2,}")
CTRL_RE = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")

MSG_MAX_BYTES = 2000
HEAD_BYTES = 64 * 1024  # how much of stdout/stderr is read back


# ----------------------------------------------------------------------------------------------
# Seeds
# ----------------------------------------------------------------------------------------------

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_text(name, data):
    """Whether token-level mutators apply to this file's bytes."""
    ext = os.path.splitext(name)[1].lower()
    if ext in (".bvh", ".ram", ".raa", ".gltf"):
        return True
    if ext == ".x":
        return data[8:12] == b"txt "
    if ext == ".fbx":
        return not data.startswith(b"Kaydara FBX Binary")
    return False


def gltf_companions(path):
    """External files a .gltf names (buffers: mutable; images: carried unchanged)."""
    out = []
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except Exception:
        return out
    base = os.path.dirname(path)
    for key, mutable in (("buffers", True), ("images", False)):
        for item in doc.get(key, []) or []:
            uri = item.get("uri") if isinstance(item, dict) else None
            if not isinstance(uri, str) or uri.startswith("data:"):
                continue
            rel = os.path.normpath(urllib.parse.unquote(uri))
            if os.path.isabs(rel) or rel.startswith(".."):
                continue
            full = os.path.join(base, rel)
            if os.path.isfile(full):
                out.append((rel, full, mutable))
    return out


def make_group(sid, origin, main_path, companions):
    """A seed: the input file skelett is given plus the files that must lie beside it.

    files: list of {rel, src, mutable}; the mutant folder holds every file at `rel`.
    """
    files = [{"rel": os.path.basename(main_path), "src": main_path, "mutable": True}]
    for rel, src, mutable in companions:
        files.append({"rel": rel, "src": src, "mutable": mutable})
    size = sum(os.path.getsize(f["src"]) for f in files)
    for f in files:
        f["sha256"] = sha256_file(f["src"])
        f["size"] = os.path.getsize(f["src"])
    return {"id": sid, "origin": origin, "files": files, "size": size}


def data_seeds(data_dir, max_bytes):
    seeds, skipped = [], []
    for root, dirs, names in os.walk(data_dir):
        dirs.sort()
        for name in sorted(names):
            ext = os.path.splitext(name)[1].lower()
            if ext not in SEED_EXTS:
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, data_dir)
            comps = []
            if ext == ".gltf":
                comps = gltf_companions(path)
            elif ext == ".ram":
                raa = os.path.splitext(path)[0] + ".raa"
                if os.path.isfile(raa):
                    comps = [(os.path.basename(raa), raa, True)]
            group = make_group("data:" + rel, "data", path, comps)
            if group["size"] > max_bytes:
                skipped.append({"id": group["id"], "size": group["size"], "why": "larger than --max-seed-mb"})
                continue
            seeds.append(group)
    seeds.sort(key=lambda s: s["id"])
    return seeds, skipped


def own_seeds(binary, data_seed_list, own_dir, limits, timeout):
    """skelett's own outputs: for the smallest data seed of each kind, .skl, .ram + .raa and .glb."""
    kinds = {}
    for s in data_seed_list:
        f = s["files"][0]
        ext = os.path.splitext(f["rel"])[1].lower()
        with open(f["src"], "rb") as fh:
            head = fh.read(32)
        kind = ext
        if ext == ".fbx":
            kind = "fbx-binary" if head.startswith(b"Kaydara FBX Binary") else "fbx-ascii"
        elif ext == ".x":
            if head[8:12] != b"txt ":
                continue  # skelett reads text .x only: nothing to convert
        if kind not in kinds or (s["size"], s["id"]) < (kinds[kind]["size"], kinds[kind]["id"]):
            kinds[kind] = s
    seeds, notes = [], []
    for kind in sorted(kinds):
        src = kinds[kind]
        main = os.path.join(src["files"][0]["src"])
        stem = os.path.splitext(os.path.basename(main))[0] + "_own"
        for out_ext in (".skl", ".ram", ".glb"):
            d = os.path.join(own_dir, stem + out_ext.replace(".", "_"))
            os.makedirs(d, exist_ok=True)
            out = os.path.join(d, stem + out_ext)
            r = run_cmd([binary, "convert", main, out], d, limits, timeout)
            if r["rc"] != 0 or not os.path.isfile(out):
                notes.append({"from": src["id"], "to": out_ext, "rc": r["rc"], "stderr": r["stderr"][:300]})
                continue
            comps = []
            if out_ext == ".ram":
                raa = os.path.splitext(out)[0] + ".raa"  # absent when there are no clips
                if os.path.isfile(raa):
                    comps = [(os.path.basename(raa), raa, True)]
            seeds.append(make_group("own:%s->%s" % (src["id"][5:], out_ext[1:]), "own", out, comps))
    return seeds, notes


# ----------------------------------------------------------------------------------------------
# Mutators (deterministic: everything comes from the rng handed in)
# ----------------------------------------------------------------------------------------------

def pick_pos(rng, n):
    """A position in [0, n), biased towards headers, where the counts and offsets live."""
    if n <= 0:
        return 0
    r = rng.random()
    if r < 0.3:
        return rng.randrange(min(n, 4096))
    if r < 0.5:
        return rng.randrange(max(1, n // 8))
    return rng.randrange(n)


def pick_len(rng):
    return rng.choice([1, 2, 4, 8, 16, 64, 256, 1024, 4096]) * (1 if rng.random() < 0.7 else rng.randint(1, 4))


def m_truncate(rng, data):
    cut = pick_pos(rng, len(data))
    return data[:cut], "truncate at %d of %d" % (cut, len(data))


def m_flip(rng, data):
    data = bytearray(data)
    if not data:
        return bytes(data), "flip (empty)"
    k = rng.choice([1, 1, 2, 4, 8, 16])
    where = []
    for _ in range(k):
        i = pick_pos(rng, len(data))
        x = rng.randrange(1, 256)
        data[i] ^= x
        where.append("%d^%02x" % (i, x))
    return bytes(data), "flip " + ",".join(where)


def m_overwrite_int(rng, data):
    data = bytearray(data)
    if len(data) < 8:
        return m_flip(rng, bytes(data))
    i = pick_pos(rng, len(data) - 7) & ~3
    val = rng.choice([b"\xff\xff\xff\xff", b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00\x00\x00\x00",
                      b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\xff\xff\xff\xff\xff\xff\xff\xff",
                      b"\xff\xff\xff\xff\xff\xff\xff\x7f"])
    data[i:i + len(val)] = val
    return bytes(data), "overwrite %d with %s" % (i, val.hex())


def m_zero(rng, data):
    n = len(data)
    a = pick_pos(rng, n)
    ln = min(pick_len(rng), n - a)
    return data[:a] + b"\0" * ln + data[a + ln:], "zero %d..%d" % (a, a + ln)


def m_dup(rng, data):
    n = len(data)
    a = pick_pos(rng, n)
    ln = min(pick_len(rng), n - a)
    b = a + ln if rng.random() < 0.5 else pick_pos(rng, n)
    return data[:b] + data[a:a + ln] + data[b:], "duplicate %d..%d at %d" % (a, a + ln, b)


def _find(rng, regex, data):
    m = regex.search(data, pick_pos(rng, len(data)))
    return m or regex.search(data)


def _line_at(data, p):
    s = data.rfind(b"\n", 0, p) + 1
    e = data.find(b"\n", p)
    e = len(data) if e < 0 else e + 1
    return s, e


def t_number(rng, data, choices, label):
    m = _find(rng, NUM_RE, data)
    if not m:
        return None
    v = rng.choice(choices)
    return data[:m.start()] + v + data[m.end():], "%s %d: %r -> %r" % (label, m.start(), m.group().decode(), v.decode())


def t_huge(rng, data):
    return t_number(rng, data, HUGE_NUMBERS, "number")


def t_nonfinite(rng, data):
    return t_number(rng, data, NON_FINITE, "non-finite")


def t_del_line(rng, data):
    if not data:
        return None
    s, e = _line_at(data, pick_pos(rng, len(data)))
    return data[:s] + data[e:], "delete line at %d (%r)" % (s, data[s:e][:60].decode("latin-1"))


def t_dup_line(rng, data):
    if not data:
        return None
    s, e = _line_at(data, pick_pos(rng, len(data)))
    k = rng.choice([1, 1, 2, 3])
    return data[:e] + data[s:e] * k + data[e:], "duplicate line at %d x%d (%r)" % (s, k, data[s:e][:60].decode("latin-1"))


def t_del_sep(rng, data):
    sep = rng.choice([b";", b","])
    p = data.find(sep, pick_pos(rng, len(data)))
    if p < 0:
        p = data.find(sep)
    if p < 0:
        return None
    if rng.random() < 0.3:
        s, e = _line_at(data, p)
        return data[:s] + data[s:e].replace(sep, b"") + data[e:], "delete every %r in line at %d" % (sep.decode(), s)
    return data[:p] + data[p + 1:], "delete %r at %d" % (sep.decode(), p)


def t_break_kw(rng, data):
    m = _find(rng, WORD_RE, data)
    if not m:
        return None
    w = m.group()
    how = rng.randrange(4)
    if how == 0:
        i = rng.randrange(len(w))
        nw = w[:i] + w[i + 1:]
    elif how == 1:
        nw = w[:1].swapcase() + w[1:]
    elif how == 2:
        nw = w + b"X"
    else:
        nw = w[::-1]
    return data[:m.start()] + nw + data[m.end():], "keyword %d: %r -> %r" % (m.start(), w.decode(), nw.decode())


BYTE_MUTATORS = [m_truncate, m_flip, m_overwrite_int, m_zero, m_dup]
TEXT_MUTATORS = [t_huge, t_nonfinite, t_del_line, t_dup_line, t_del_sep, t_break_kw]


def text_mutate(rng, data):
    for _ in range(4):
        r = rng.choice(TEXT_MUTATORS)(rng, data)
        if r is not None:
            return r
    return rng.choice(BYTE_MUTATORS)(rng, data)


def glb_json_mutate(rng, data):
    """Token-level mutation of a .glb's JSON chunk, with the chunk and file lengths fixed up."""
    if len(data) < 20 or data[:4] != b"glTF" or data[16:20] != b"JSON":
        return None
    jlen = int.from_bytes(data[12:16], "little")
    if 20 + jlen > len(data):
        return None
    js, rest = data[20:20 + jlen], data[20 + jlen:]
    js, desc = text_mutate(rng, js)
    js += b" " * (-len(js) % 4)
    header = data[:4] + data[4:8] + (20 + len(js) + len(rest)).to_bytes(4, "little")
    return header + len(js).to_bytes(4, "little") + b"JSON" + js + rest, "glb json: " + desc


def skl_payload_mutate(rng, data):
    """Mutate a .skl's payload and fix up its length and CRC-32, so the mutation gets past the
    checksum into the decoder (header: "SKLT" | version u32 | payload length u64 | CRC-32 u32),
    sometimes also claiming an older format version (1 to 3, still read)."""
    if len(data) < 20 or data[:4] != b"SKLT":
        return None
    payload, desc = rng.choice(BYTE_MUTATORS)(rng, data[20:])
    version = data[4:8]
    if rng.random() < 0.15:
        version = rng.choice([1, 2, 3]).to_bytes(4, "little")
        desc += ", version %d" % int.from_bytes(version, "little")
    header = b"SKLT" + version + len(payload).to_bytes(8, "little") + zlib.crc32(payload).to_bytes(4, "little")
    return header + payload, "skl payload (length and CRC fixed): " + desc


def mutate_once(rng, name, data):
    ext = os.path.splitext(name)[1].lower()
    if ext == ".skl" and rng.random() < 0.7:
        r = skl_payload_mutate(rng, data)
        if r is not None:
            return r
    if ext == ".glb" and rng.random() < 0.5:
        r = glb_json_mutate(rng, data)
        if r is not None:
            return r
    if is_text(name, data) and rng.random() < 0.6:
        return text_mutate(rng, data)
    return rng.choice(BYTE_MUTATORS)(rng, data)


def build_mutant(campaign_seed, idx, seed):
    """(target rel, mutated bytes, descriptions) for mutant idx of this campaign seed."""
    rng = random.Random("skelett-hostile:%d:%d" % (campaign_seed, idx))
    mutable = [f for f in seed["files"] if f["mutable"]]
    if len(mutable) == 1 or rng.random() < 0.5:
        target = mutable[0]
    else:
        target = rng.choice(mutable[1:])
    with open(target["src"], "rb") as fh:
        data = fh.read()
    descs = []
    for _ in range(2 if rng.random() < 0.2 else 1):
        data, d = mutate_once(rng, target["rel"], data)
        descs.append(d)
    return target["rel"], data, descs


def seed_order(campaign_seed, seeds):
    order = list(range(len(seeds)))
    random.Random("skelett-hostile-order:%d" % campaign_seed).shuffle(order)
    return order


# ----------------------------------------------------------------------------------------------
# Running skelett
# ----------------------------------------------------------------------------------------------

def _preexec(mem_bytes, fsize_bytes):
    def f():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_bytes, fsize_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return f


def _read_head(path):
    with open(path, "rb") as f:
        return f.read(HEAD_BYTES)


def run_cmd(argv, cwd, limits, timeout):
    """Run one command with stdout/stderr in files (so a flood is capped by RLIMIT_FSIZE too)."""
    mem_bytes, fsize_bytes = limits
    fd_out, out_path = tempfile.mkstemp(prefix=".stdout-", dir=cwd)
    fd_err, err_path = tempfile.mkstemp(prefix=".stderr-", dir=cwd)
    env = dict(os.environ, RUST_BACKTRACE="0")
    t0 = time.monotonic()
    timed_out = False
    try:
        p = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=fd_out, stderr=fd_err, env=env,
                             preexec_fn=_preexec(mem_bytes, fsize_bytes), start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group of the process started here
            except ProcessLookupError:
                pass
            rc = p.wait()
    finally:
        os.close(fd_out)
        os.close(fd_err)
    elapsed = time.monotonic() - t0
    res = {
        "rc": rc,
        "timed_out": timed_out,
        "time_s": round(elapsed, 3),
        "stdout_size": os.path.getsize(out_path),
        "stderr_size": os.path.getsize(err_path),
        "stdout_b": _read_head(out_path),
        "stderr_b": _read_head(err_path),
    }
    os.unlink(out_path)
    os.unlink(err_path)
    res["stderr"] = res["stderr_b"].decode("utf-8", "replace")
    return res


def sig_name(rc):
    try:
        return signal.Signals(-rc).name
    except (ValueError, TypeError):
        return "signal %d" % -rc


def classify(res, kind, names, out_files, cap_bytes, text_stdout):
    """(class, detail) for one finished run."""
    err_b = res["stderr_b"]
    err = res["stderr"]
    rc = res["rc"]
    if res["timed_out"]:
        return TIMEOUT, "killed after %.1f s" % res["time_s"]
    if "panicked" in err or rc == 101:
        line = next((l for l in err.splitlines() if "panicked" in l), err.splitlines()[0] if err else "")
        return PANIC, line.strip()[:300]
    big = [(os.path.basename(p), s) for p, s in out_files if s > cap_bytes]
    if rc == -signal.SIGXFSZ or "File too large" in err or big or res["stdout_size"] > cap_bytes:
        return AMPLIFICATION, "outputs %s, stdout %d bytes, rc %s" % (big, res["stdout_size"], rc)
    if rc < 0:
        detail = sig_name(rc)
        if "memory allocation" in err:
            detail += " (allocation failure under the memory limit)"
        return SIGNAL, detail
    problems = []
    if CTRL_RE.search(err_b):
        problems.append("raw control characters in stderr")
    try:
        err_b.decode("utf-8")
    except UnicodeDecodeError:
        problems.append("stderr is not valid UTF-8")
    if rc == 0:
        if text_stdout and CTRL_RE.search(res["stdout_b"]):
            problems.append("raw control characters in stdout")
        if kind == "inspect-json":
            try:
                json.loads(res["stdout_b"].decode("utf-8"), parse_constant=_reject_constant)
                if res["stdout_size"] > HEAD_BYTES:
                    pass  # only the head was read: a truncated head cannot be judged
            except Exception as e:  # noqa: BLE001 - any parse failure is the finding
                if res["stdout_size"] <= HEAD_BYTES:
                    return BAD_JSON, "stdout is not strict JSON: %s" % e
        return (MESSAGE, "; ".join(problems)) if problems else (OK, "")
    if res["stderr_size"] > MSG_MAX_BYTES:
        problems.append("stderr is %d bytes" % res["stderr_size"])
    if not err.strip():
        problems.append("empty stderr")
    elif not any(n and n in err for n in names):
        problems.append("stderr does not name the file")
    if problems:
        return MESSAGE, "; ".join(problems)
    return CLEAN, ""


def _reject_constant(name):
    raise ValueError("non-standard JSON constant %s" % name)


def signature(cls, cmd, detail, stderr, names):
    """A short key grouping findings that are probably the same bug."""
    if cls == PANIC:
        lines = stderr.splitlines()
        for i, l in enumerate(lines):
            if "panicked" in l:
                msg = l + (" | " + lines[i + 1] if i + 1 < len(lines) and l.rstrip().endswith(":") else "")
                break
        else:
            msg = detail
    elif cls in (TIMEOUT, AMPLIFICATION):
        msg = ""
    else:
        msg = detail + " | " + (stderr.strip().splitlines() or [""])[0]
    for n in sorted(names, key=len, reverse=True):
        if n:
            msg = msg.replace(n, "<FILE>")
    msg = re.sub(r"\d+", "N", msg)
    msg = re.sub(r"(.{1,8}?)\1{3,}", r"\1...", msg)  # "\0\0\0\0..." and the like
    msg = re.sub(r"(\.rs):N:N", r"\1", msg)  # keep the file of a panic, not its line
    return "%s | %s | %s" % (cls, cmd.split("-")[0], msg[:240])


# ----------------------------------------------------------------------------------------------
# One mutant
# ----------------------------------------------------------------------------------------------

CTX = {}


def init_worker(ctx):
    CTX.clear()
    CTX.update(ctx)


def process_mutant(idx):
    c = CTX
    seed = c["seeds"][c["order"][idx % len(c["order"])]]
    target_rel, data, descs = build_mutant(c["campaign_seed"], idx, seed)
    mdir = os.path.join(c["work"], "m%06d" % idx)
    if os.path.exists(mdir):
        shutil.rmtree(mdir)
    os.makedirs(mdir)
    try:
        return _process(idx, seed, target_rel, data, descs, mdir)
    finally:
        shutil.rmtree(mdir, ignore_errors=True)


def _process(idx, seed, target_rel, data, descs, mdir):
    c = CTX
    for f in seed["files"]:
        dst = os.path.join(mdir, f["rel"])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if f["rel"] == target_rel:
            with open(dst, "wb") as fh:
                fh.write(data)
        else:
            shutil.copyfile(f["src"], dst)
    main_rel = seed["files"][0]["rel"]
    inp = os.path.join(mdir, main_rel)
    fmt = os.path.splitext(target_rel)[1].lower().lstrip(".")
    base_names = [inp] + [f["rel"] for f in seed["files"]]  # what an error message may name
    mutant = {
        "idx": idx, "seed": seed["id"], "origin": seed["origin"], "format": fmt, "target": target_rel,
        "mutations": descs, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
    }
    runs = []
    kept = os.path.join(mdir, "kept-outputs")  # outputs that failed to load again, for the findings folder
    binary = c["binary"]
    limits = (c["mem_bytes"], c["cap_bytes"] + (1 << 20))
    for name in c["commands"]:
        kind, out_ext = COMMANDS[name]
        odir = os.path.join(mdir, "out-" + name)
        os.makedirs(odir)
        outs = []
        if kind == "inspect":
            argv = [binary, "inspect", inp]
        elif kind == "inspect-json":
            argv = [binary, "inspect", inp, "--json"]
        else:
            out = os.path.join(odir, "out" + out_ext)
            argv = [binary, "convert", inp, out]
            outs = [out] + ([os.path.join(odir, "out.raa")] if out_ext == ".ram" else [])
        res = run_cmd(argv, mdir, limits, c["timeout"])
        sizes = [(p, os.path.getsize(p)) for p in outs if os.path.isfile(p)]
        names = base_names + outs + [os.path.basename(p) for p in outs]
        cls, detail = classify(res, kind, names, sizes, c["cap_bytes"], kind == "inspect")
        runs.append(_record(name, argv, mdir, res, cls, detail, names + [mdir], {odir + "/": "out/"}))
        if res["rc"] != 0 and sizes and kind == "convert":
            runs[-1]["left_output"] = True
        if kind == "convert" and res["rc"] == 0 and cls in (OK, MESSAGE):
            missing = [os.path.basename(p) for p in outs[:1] if not os.path.isfile(p)]  # .raa: only with clips
            rname = "reinspect-" + out_ext[1:]
            if missing:
                runs.append({"cmd": rname, "argv": [], "repro": [], "repro_pre": runs[-1]["repro"], "rc": None,
                             "signal": None, "time_s": 0, "class": REFUSED, "detail": "convert exited 0 but did not write %s" % missing,
                             "stderr_size": 0, "stdout_size": 0, "stderr_head": "",
                             "signature": "%s | reinspect | missing output" % REFUSED})
            else:
                rargv = [binary, "inspect", outs[0]]
                rres = run_cmd(rargv, mdir, limits, c["timeout"])
                rcls, rdetail = classify(rres, "inspect", names, [], c["cap_bytes"], True)
                if rres["rc"] != 0 or rres["timed_out"]:
                    rdetail = "own output fails to load again (%s%s)" % (rcls, ": " + rdetail if rdetail else "")
                    rcls = REFUSED
                runs.append(_record(rname, rargv, mdir, rres, rcls, rdetail, names + [mdir], {odir + "/": "out/"}))
                runs[-1]["repro_pre"] = runs[-2]["repro"]
                if rcls not in BENIGN:
                    os.makedirs(os.path.join(kept, name), exist_ok=True)
                    for p in (p for p in outs if os.path.isfile(p)):
                        shutil.copyfile(p, os.path.join(kept, name, os.path.basename(p)))
        shutil.rmtree(odir, ignore_errors=True)
    findings = [r for r in runs if r["class"] not in BENIGN]
    if findings and c["keep"]:
        mutant["saved"] = _save(mutant, seed, mdir, findings)
    return {"mutant": mutant, "runs": runs}


def _record(name, argv, mdir, res, cls, detail, names, repro_map):
    lines = res["stderr"].strip().splitlines()
    repro = []
    for a in argv[1:]:
        for k, v in repro_map.items():
            a = a.replace(k, v)
        repro.append(a.replace(mdir + "/", ""))
    return {
        "cmd": name,
        "argv": [a.replace(mdir, "$M") for a in argv[1:]],
        "repro": repro,
        "rc": res["rc"],
        "signal": sig_name(res["rc"]) if isinstance(res["rc"], int) and res["rc"] < 0 else None,
        "time_s": res["time_s"],
        "class": cls,
        "detail": detail.replace(mdir, "$M"),
        "stderr_size": res["stderr_size"],
        "stdout_size": res["stdout_size"],
        "stderr_head": "\n".join(lines[:6])[:800].replace(mdir, "$M"),
        "signature": signature(cls, name, detail, res["stderr"], names) if cls not in BENIGN else None,
    }


def _save(mutant, seed, mdir, findings):
    c = CTX
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(seed["files"][0]["rel"]))
    d = os.path.join(c["keep"], "s%d-m%06d-%s" % (c["campaign_seed"], mutant["idx"], stem))
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    for f in seed["files"]:
        dst = os.path.join(d, f["rel"])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(mdir, f["rel"]), dst)
    if os.path.isdir(os.path.join(mdir, "kept-outputs")):
        shutil.copytree(os.path.join(mdir, "kept-outputs"), os.path.join(d, "kept-outputs"))
    # repro.sh replays every command that gave a finding, from the saved folder.
    lines = ["#!/bin/sh", "# %s mutant %d of seed %s: %s" % (seed["id"], mutant["idx"], c["campaign_seed"],
                                                             "; ".join(mutant["mutations"])),
             "# rebuild with: python3 scripts/hostile/campaign.py --seed %d --first %d --count 1%s"
             % (c["campaign_seed"], mutant["idx"], c["rebuild_opts"]),
             'cd "$(dirname "$0")"', 'SKELETT="${SKELETT:-%s}"' % c["binary"],
             "ulimit -v %d; ulimit -c 0" % (c["mem_bytes"] // 1024), "mkdir -p out"]
    for r in findings:
        lines.append("echo '== %s (%s)'" % (r["cmd"], r["class"]))
        if r.get("repro_pre"):
            lines.append('timeout %d "$SKELETT" %s; echo "exit $?"' % (c["timeout"], " ".join(_shq(x) for x in r["repro_pre"])))
        if not r["repro"]:
            continue
        lines.append('timeout %d "$SKELETT" %s; echo "exit $?"' % (c["timeout"], " ".join(_shq(x) for x in r["repro"])))
    with open(os.path.join(d, "repro.sh"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    os.chmod(os.path.join(d, "repro.sh"), 0o755)
    with open(os.path.join(d, "finding.json"), "w") as fh:
        json.dump({"mutant": mutant, "findings": findings}, fh, indent=1)
    return d


def _shq(s):
    return s if re.fullmatch(r"[A-Za-z0-9_./=+-]+", s) else "'" + s.replace("'", "'\\''") + "'"


# ----------------------------------------------------------------------------------------------
# Reporting
# ----------------------------------------------------------------------------------------------

def table(title, rows, cols):
    keys = sorted(rows)
    w0 = max([len(title)] + [len(k) for k in keys])
    widths = [max(len(c), 5) for c in cols]
    out = [title.ljust(w0) + "  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths)) + "  total"]
    for k in keys:
        vals = [rows[k].get(c, 0) for c in cols]
        out.append(k.ljust(w0) + "  " + "  ".join((str(v) if v else ".").rjust(w) for v, w in zip(vals, widths))
                   + "  " + str(sum(vals)).rjust(5))
    return "\n".join(out)


def summarize(results, elapsed):
    by_class, by_fmt, by_cmd, sigs = {}, {}, {}, {}
    left = 0
    for r in results:
        m = r["mutant"]
        fkey = "%s:%s" % (m["origin"], m["format"])
        for run in r["runs"]:
            cls = run["class"]
            by_class[cls] = by_class.get(cls, 0) + 1
            by_fmt.setdefault(fkey, {})[cls] = by_fmt.setdefault(fkey, {}).get(cls, 0) + 1
            by_cmd.setdefault(run["cmd"], {})[cls] = by_cmd.setdefault(run["cmd"], {}).get(cls, 0) + 1
            left += 1 if run.get("left_output") else 0
            if cls not in BENIGN:
                s = sigs.setdefault(run["signature"], {"class": cls, "count": 0, "commands": [], "examples": []})
                s["count"] += 1
                if run["cmd"] not in s["commands"]:
                    s["commands"].append(run["cmd"])
                if len(s["examples"]) < 3:
                    s["examples"].append({"idx": m["idx"], "seed": m["seed"], "mutations": m["mutations"],
                                          "cmd": run["cmd"], "stderr_head": run["stderr_head"],
                                          "saved": m.get("saved")})
    cols = [c for c in CLASSES if any(c in row for row in by_fmt.values())] or [OK]
    return {"by_class": by_class, "by_format": by_fmt, "by_command": by_cmd, "signatures": sigs,
            "failed_runs_leaving_output": left, "columns": cols, "elapsed_s": round(elapsed, 1)}


def print_summary(summary, n_mutants, n_runs):
    cols = summary["columns"]
    print()
    print("%d mutants, %d runs, %.1f s" % (n_mutants, n_runs, summary["elapsed_s"]))
    print()
    print("runs per class:")
    for c in CLASSES:
        if summary["by_class"].get(c):
            print("  %-20s %6d" % (c, summary["by_class"][c]))
    print()
    print(table("seed format", summary["by_format"], cols))
    print()
    print(table("command", summary["by_command"], cols))
    if summary["failed_runs_leaving_output"]:
        print("\n(failed converts that left an output file behind: %d)" % summary["failed_runs_leaving_output"])
    sigs = summary["signatures"]
    print()
    if not sigs:
        print("no findings")
        return
    print("%d distinct findings (class | command | normalised message):" % len(sigs))
    for key, s in sorted(sigs.items(), key=lambda kv: (CLASSES.index(kv[1]["class"]), -kv[1]["count"], kv[0])):
        ex = s["examples"][0]
        print("- [%dx] %s   (%s)" % (s["count"], key, ", ".join(s["commands"])))
        print("    e.g. mutant %d of %s (%s)" % (ex["idx"], ex["seed"], "; ".join(ex["mutations"])[:160]))
        for l in ex["stderr_head"].splitlines()[:3]:
            print("      | " + l[:200])
        if ex.get("saved"):
            print("    saved: %s" % ex["saved"])


# ----------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    ap.add_argument("--count", type=int, default=200, help="number of mutants (default 200)")
    ap.add_argument("--first", type=int, default=0, help="index of the first mutant (to split or replay a campaign)")
    ap.add_argument("--jobs", type=int, default=1, help="mutants run in parallel (default 1)")
    ap.add_argument("--out", default=None, help="JSON report (default: report.json in --keep)")
    ap.add_argument("--keep", default="/tmp/hostile_findings", help="folder for findings (default /tmp/hostile_findings)")
    ap.add_argument("--skelett", default=DEFAULT_BIN, help="the CLI binary (default target/release/skelett)")
    ap.add_argument("--data", default=DEFAULT_DATA, help="seed folder (default ../shared/data or $SKELETT_DATA)")
    ap.add_argument("--max-seed-mb", type=float, default=8.0, help="skip seeds larger than this (default 8)")
    ap.add_argument("--timeout", type=int, default=10, help="seconds per command (default 10)")
    ap.add_argument("--mem-gb", type=float, default=4.0, help="RLIMIT_AS per command in GiB (default 4)")
    ap.add_argument("--max-output-mb", type=int, default=256, help="outputs larger than this are amplification (256)")
    ap.add_argument("--commands", default=DEFAULT_COMMANDS,
                    help="comma-separated, from %s (default %s)" % (",".join(COMMANDS), DEFAULT_COMMANDS))
    ap.add_argument("--formats", default="", help="only seeds of these extensions, e.g. bvh,x (default all)")
    ap.add_argument("--no-own", action="store_true", help="do not add skelett's own outputs as seeds")
    ap.add_argument("--tmp", default=None, help="where the work folder goes (default the system temp folder)")
    ap.add_argument("--list-seeds", action="store_true", help="print the seeds and exit")
    a = ap.parse_args()

    binary = os.path.abspath(a.skelett)
    if not os.access(binary, os.X_OK):
        sys.exit("no executable skelett at %s (build it with cargo build --release)" % binary)
    commands = [c.strip() for c in a.commands.split(",") if c.strip()]
    bad = [c for c in commands if c not in COMMANDS]
    if bad:
        sys.exit("unknown command(s) %s; choose from %s" % (bad, ",".join(COMMANDS)))
    formats = {f.strip().lstrip(".").lower() for f in a.formats.split(",") if f.strip()}
    mem_bytes = int(a.mem_gb * (1 << 30))
    cap_bytes = a.max_output_mb << 20
    limits = (mem_bytes, cap_bytes + (1 << 20))

    work = tempfile.mkdtemp(prefix="skelett-hostile-", dir=a.tmp)
    t0 = time.monotonic()
    try:
        seeds, skipped = data_seeds(os.path.abspath(a.data), int(a.max_seed_mb * (1 << 20)))
        own_notes = []
        if not a.no_own:
            own, own_notes = own_seeds(binary, seeds, os.path.join(work, "own"), limits, a.timeout)
            own = [s for s in own if s["size"] <= a.max_seed_mb * (1 << 20)]
            seeds += own
        if formats:
            seeds = [s for s in seeds if any(os.path.splitext(f["rel"])[1].lower().lstrip(".") in formats
                                             for f in s["files"] if f["mutable"])]
        if not seeds:
            sys.exit("no seeds under %s%s" % (a.data, " of formats %s" % sorted(formats) if formats else ""))
        order = seed_order(a.seed, seeds)
        if a.list_seeds:
            for s in seeds:
                print("%-60s %10d  %s" % (s["id"], s["size"], ", ".join(f["rel"] for f in s["files"])))
            for s in skipped:
                print("skipped %s (%d bytes)" % (s["id"], s["size"]))
            for n in own_notes:
                print("own output %s from %s not made (rc %s): %s" % (n["to"], n["from"], n["rc"], n["stderr"].strip()))
            return
        version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
        print("skelett: %s (%s)" % (binary, version))
        print("seeds: %d (%d own outputs), skipped %d larger than %g MB; %d mutants from #%d, seed %d, jobs %d"
              % (len(seeds), sum(s["origin"] == "own" for s in seeds), len(skipped), a.max_seed_mb, a.count,
                 a.first, a.seed, a.jobs))
        for n in own_notes:
            print("note: own output %s from %s not made (rc %s): %s" % (n["to"], n["from"], n["rc"], n["stderr"].strip()))
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        ids = list(range(a.first, a.first + a.count))
        # the options that change the seed list (and so which seed mutant N comes from)
        rebuild_opts = "".join([
            " --data %s" % a.data if os.path.abspath(a.data) != os.path.abspath(DEFAULT_DATA) else "",
            " --max-seed-mb %g" % a.max_seed_mb if a.max_seed_mb != 8.0 else "",
            " --formats %s" % ",".join(sorted(formats)) if formats else "",
            " --no-own" if a.no_own else ""])
        ctx = {"seeds": seeds, "order": order, "campaign_seed": a.seed, "work": work, "binary": binary,
               "commands": commands, "timeout": a.timeout, "mem_bytes": mem_bytes, "cap_bytes": cap_bytes,
               "keep": os.path.abspath(a.keep) if a.keep else None, "rebuild_opts": rebuild_opts}
        results = []

        def progress(r):
            results.append(r)
            bad = [x for x in r["runs"] if x["class"] not in BENIGN]
            if bad or len(results) % 20 == 0 or len(results) == len(ids):
                m = r["mutant"]
                print("[%d/%d] #%d %s (%s)%s" % (len(results), len(ids), m["idx"], m["seed"], m["format"],
                                                 "".join(" %s:%s" % (x["cmd"], x["class"]) for x in bad)),
                      flush=True)

        if a.jobs <= 1:
            init_worker(ctx)
            for i in ids:
                progress(process_mutant(i))
        else:
            with ProcessPoolExecutor(max_workers=a.jobs, initializer=init_worker, initargs=(ctx,)) as ex:
                futs = [ex.submit(process_mutant, i) for i in ids]
                for f in as_completed(futs):
                    progress(f.result())
        results.sort(key=lambda r: r["mutant"]["idx"])
        elapsed = time.monotonic() - t0
        summary = summarize(results, elapsed)
        n_runs = sum(len(r["runs"]) for r in results)
        print_summary(summary, len(results), n_runs)

        report = {
            "tool": "scripts/hostile/campaign.py",
            "skelett": {"path": binary, "version": version, "sha256": sha256_file(binary)},
            "args": vars(a),
            "seeds": [{"id": s["id"], "origin": s["origin"], "size": s["size"],
                       "files": [{"rel": f["rel"], "sha256": f["sha256"], "size": f["size"], "mutable": f["mutable"]}
                                 for f in s["files"]]} for s in seeds],
            "skipped_seeds": skipped,
            "own_output_notes": own_notes,
            "summary": {k: v for k, v in summary.items() if k != "columns"},
            "findings": [dict(r["mutant"], runs=[x for x in r["runs"] if x["class"] not in BENIGN])
                         for r in results if any(x["class"] not in BENIGN for x in r["runs"])],
            "runs": [{"idx": r["mutant"]["idx"], "seed": r["mutant"]["seed"], "format": r["mutant"]["format"],
                      "mutations": r["mutant"]["mutations"],
                      "runs": [{"cmd": x["cmd"], "class": x["class"], "rc": x["rc"], "time_s": x["time_s"],
                                "msg": (x["stderr_head"].splitlines() or [""])[0][:200]}
                               for x in r["runs"]]} for r in results],
        }
        out = a.out or (os.path.join(a.keep, "report.json") if a.keep else None)
        if out:
            with open(out, "w") as fh:
                json.dump(report, fh, indent=1)
            print("\nreport: %s" % out)
        found = sum(1 for r in results for x in r["runs"] if x["class"] not in BENIGN)
        return 1 if found else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
