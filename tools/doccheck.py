#!/usr/bin/env python3
"""tools/doccheck.py: every code block of README.md and docs/*.md, checked
against the program (make test-docs; issue 25).

  python3 tools/doccheck.py --include DIR --libs "FLAGS" [--fix] [FILE.md ...]

- ```c blocks compile (cc -std=c11 -fsyntax-only) against the headers in
  DIR (make test-docs installs them there first, as a user has them), with
  the public headers included before the block, so that an excerpt that
  defines functions compiles as written. A block that is a whole program
  (it has `int main`) and names its file in its first line (`/* relu.c: ...`)
  is also linked and kept in the work directory with its source (relu.c),
  so that a later `$ ./relu` runs it.
- ```console blocks run: each `$ command` line (with `\\` continuations) runs
  with bash in a work directory where build/, examples/, bench/ and tests/
  are the tree's and `tilesim` is build/tilesim. The lines after it, up to
  the next `$`, are its output: each must match a line the command prints,
  in order, its text exactly and every number within 2 % (or 0.02 when
  both are below 1); a host's wall-clock time (`in 0.01 s`, `after
  0.001 s`) is not compared, since it varies with the machine's load. The
  command prints exactly those lines unless the block elides some: a line
  `...`, or a command whose comment says `lines of it`, `excerpt` or `rows
  excerpted`, where the shown lines must appear in order among the printed
  ones. A comment `exit status N` says the
  status the command must end with; else it must be 0.
- Other blocks (```sh, ```text, plain ```) are shown, not run.

--fix rewrites each console block's output with what the command printed
(every line of a whole block; the matched lines of an elided one): make
docs-regen. Exit status 0 when every block passes (with --fix: or was
rewritten), 1 otherwise; what --fix cannot rewrite (a C block, an exit
status, a shown line an elided block no longer prints) still fails.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRELUDE = """#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernel/pallas.h"
#include "kernel/pltpu.h"
#include "sim/tilesim.h"
#include "sim/tilesim_check.h"
#include "sim/tilesim_kernel.h"
#include "sim/tilesim_memview.h"
#include "sim/tilesim_mesh.h"
#include "sim/kdef.h"
"""
NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
HOST_TIME = re.compile(r"\b(in|after) \d+(?:\.\d+)? s\b")
# a check against OpenBLAS: its rounding error depends on the kernels
# OpenBLAS picks for the host's CPU (AVX2, AVX-512), not on tilesim
BLAS_ERR = re.compile(r"\b(max abs err|normalised err) [-+0-9.e]+")
PARTIAL = re.compile(r"lines of it|excerpt|rows excerpted")
EXIT = re.compile(r"exit status (\d+)")
TIMEOUT = 300


def blocks(path):
    """(info, first line number, body lines, index of the opening fence) of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)", lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append((m.group(1), i + 2, lines[i + 1:j], i))
            i = j + 1
        else:
            i += 1
    return lines, out


def same_line(want, got):
    """want and got have the same text and numbers within the tolerance."""
    want, got = HOST_TIME.sub(r"\1 # s", want), HOST_TIME.sub(r"\1 # s", got)
    if "cblas_" in want:
        want, got = BLAS_ERR.sub(r"\1 #", want), BLAS_ERR.sub(r"\1 #", got)
    if NUM.sub("#", want).rstrip() != NUM.sub("#", got).rstrip():
        return False
    for a, b in zip(NUM.findall(want), NUM.findall(got)):
        x, y = float(a), float(b)
        if abs(x) < 1 and abs(y) < 1:
            if abs(x - y) > 0.02:
                return False
        elif abs(x - y) > 0.02 * max(abs(x), abs(y)):
            return False
    return True


def commands(body):
    """[(command text, comment, [output lines], [body indices of output lines])] of a console block."""
    cmds, i = [], 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            i += 1  # text before the first command: not output of anything
            continue
        text = [line[2:]]
        while text[-1].rstrip().endswith("\\") and i + 1 < len(body):
            i += 1
            text.append(body[i])
        i += 1
        outs, idx = [], []
        while i < len(body) and not body[i].startswith("$ "):
            outs.append(body[i])
            idx.append(i)
            i += 1
        cmd = "\n".join(text)
        comment = cmd.split("#", 1)[1] if re.search(r"\s#\s", cmd) else ""
        cmds.append((cmd, comment, outs, idx))
    return cmds


def run(cmd, work, env):
    p = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=TIMEOUT)
    # a progress line rewritten in place ("\r12/474 shapes") shows as what a terminal keeps: the text after the last \r
    return p.returncode, [l.rsplit("\r", 1)[-1] for l in p.stdout.decode("utf-8", "replace").split("\n")]


def elided(outs):
    """The block leaves lines out: a line `...` or `... N more` among its output."""
    return any(o.strip() == "..." or o.strip().startswith("... ") for o in outs)


def compare(outs, got, partial):
    """Matched pairs (index in outs, index in got) and the first problem, or None."""
    want = [(k, w) for k, w in enumerate(outs) if w.strip() and w.strip() != "..."]
    partial = partial or elided(outs)
    got_lines = [(k, g) for k, g in enumerate(got) if g.strip()]
    pairs, at = [], 0
    for k, w in want:
        if w.strip().startswith("... "):
            continue  # an elision with a word on it ("... 29 more legal configurations")
        while at < len(got_lines) and not same_line(w, got_lines[at][1]):
            if not partial:
                return pairs, "expected  %r\n      printed   %r" % (w, got_lines[at][1])
            at += 1
        if at == len(got_lines):
            return pairs, "expected  %r\n      which the command does not print (in this order)" % w
        pairs.append((k, got_lines[at][0]))
        at += 1
    if not partial and at < len(got_lines):
        return pairs, "the command prints more lines than shown, from %r (mark the block elided)" % got_lines[at][1]
    return pairs, None


def compile_c(body, name, args, work):
    src = os.path.join(work, "doc_block.c")
    prog = re.match(r"/\* (\w+)\.c\b", body[0]) if body else None
    whole = prog and any(re.match(r"int main\b", l) for l in body)
    with open(src, "w") as f:
        f.write(PRELUDE if not whole else "")
        f.write("\n".join(body) + "\n")
    base = ["cc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wno-unused-function", "-I" + args.include]
    p = subprocess.run(base + ["-fsyntax-only", src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        return "does not compile:\n" + p.stdout.decode()
    if whole:
        out = os.path.join(work, prog.group(1))
        shutil.copyfile(src, out + ".c")  # as the reader saves it, for a later `$ cc ... NAME.c`
        p = subprocess.run(base + ["-O2", src, "-o", out] + args.libs.split(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if p.returncode:
            return "does not link:\n" + p.stdout.decode()
    return None


def setup(work):
    for d in ("build", "examples", "bench", "tests", "models", "kernel", "sim"):
        if os.path.exists(os.path.join(ROOT, d)):
            os.symlink(os.path.join(ROOT, d), os.path.join(work, d))
    os.makedirs(os.path.join(work, ".bin"))
    os.symlink(os.path.join(ROOT, "build", "tilesim"), os.path.join(work, ".bin", "tilesim"))
    for so in ("rmsnorm", "ring_reduce_scatter"):  # the plugins the guides build with their one line
        os.symlink(os.path.join(ROOT, "build", "examples", "plugin", so + ".so"), os.path.join(work, so + ".so"))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", LC_ALL="C")
    env["PATH"] = os.path.join(work, ".bin") + os.pathsep + env.get("PATH", "")
    return env


def check_file(path, args, work, env):
    lines, found = blocks(path)
    rel = os.path.relpath(path, ROOT)
    bad, checked, edits = 0, 0, []  # edits: (first, last) output lines of a whole block, and what replaces them
    for info, line, body, fence in found:
        if info == "c":
            checked += 1
            err = compile_c(body, path, args, work)
            if err:
                bad += 1
                print("%s:%d: C block %s" % (rel, line, err))
        if info != "console":
            continue
        for cmd, comment, outs, idx in commands(body):
            checked += 1
            want_rc = int(EXIT.search(comment).group(1)) if EXIT.search(comment) else 0
            try:
                rc, got = run(cmd, work, env)
            except subprocess.TimeoutExpired:
                bad += 1
                print("%s:%d: `%s` ran past %d s" % (rel, line, cmd.splitlines()[0], TIMEOUT))
                continue
            while got and not got[-1].strip():
                got.pop()
            partial = bool(PARTIAL.search(comment))
            pairs, err = compare(outs, got, partial)
            if rc != want_rc:
                err = "exit status %d, not %d%s" % (rc, want_rc, "; " + err if err else "")
            if args.fix and (err or pairs):
                if not partial and not elided(outs):
                    if idx:  # a command shown without output gets none written in
                        edits.append((fence + 1 + idx[0], fence + 1 + idx[-1], got))
                else:
                    for k, g in pairs:
                        lines[fence + 1 + idx[k]] = got[g]
            rewritten = args.fix and rc == want_rc and idx and not partial and not elided(outs)
            if err and rewritten:
                print("%s:%d: `%s`: output rewritten" % (rel, line, cmd.splitlines()[0]))
            elif err:
                bad += 1
                print("%s:%d: `%s`: %s" % (rel, line, cmd.splitlines()[0], err))
    if args.fix:
        for first, last, got in sorted(edits, reverse=True):  # from the end: earlier line numbers stay good
            lines[first:last + 1] = got
        tmp = path + ".doccheck.tmp"  # written whole, then renamed over the page
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.replace(tmp, path)
    return bad, checked


def main():
    ap = argparse.ArgumentParser(description="check the code blocks of README.md and docs/*.md")
    ap.add_argument("--include", required=True, help="the installed headers (PREFIX/include/tilesim)")
    ap.add_argument("--libs", required=True, help="link flags for a whole program (pkg-config --libs tilesim)")
    ap.add_argument("--fix", action="store_true", help="rewrite console outputs with what the commands print")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = args.files or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    work = tempfile.mkdtemp(prefix="doccheck.")
    try:
        env = setup(work)
        bad = checked = 0
        for path in files:
            b, c = check_file(path, args, work, env)
            bad, checked = bad + b, checked + c
        print("doccheck: %d of %d blocks and commands %s" % (checked - bad, checked, "pass" if not bad else
                                                              "pass; %d fail" % bad))
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
