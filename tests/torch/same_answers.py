# SPDX-License-Identifier: BSD-3-Clause
"""same_answers.py A B: the two outputs say the same, line by line and word
by word, numbers equal within a relative 1e-5 (backends may add in a
different order). Exit 0 when they do; else print the first difference."""
import sys


def number(word):
    try:
        return float(word.strip("[](),:"))
    except ValueError:
        return None


def same(a, b):
    x, y = number(a), number(b)
    if x is None or y is None:
        return a == b
    return abs(x - y) <= 1e-5 * max(1.0, abs(x), abs(y))


def main(a_path, b_path):
    a = open(a_path).read().split("\n")
    b = open(b_path).read().split("\n")
    if len(a) != len(b):
        print("%s has %d lines, %s has %d" % (a_path, len(a), b_path, len(b)))
        return 1
    for i, (la, lb) in enumerate(zip(a, b)):
        wa, wb = la.replace(",", " , ").split(), lb.replace(",", " , ").split()
        if len(wa) != len(wb) or not all(same(x, y) for x, y in zip(wa, wb)):
            print("line %d differs:\n  %s\n  %s" % (i + 1, la, lb))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
