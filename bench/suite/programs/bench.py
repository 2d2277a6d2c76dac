# Jython workload: a mix of interpreter-heavy Python (objects, dicts, strings, generators,
# recursion, exceptions) repeated SCALE times; prints a checksum of everything it computed.
import sys, hashlib

class Node(object):
    __slots__ = ('key', 'left', 'right')
    def __init__(self, key):
        self.key = key
        self.left = None
        self.right = None

def insert(root, key):
    if root is None:
        return Node(key)
    node = root
    while True:
        if key < node.key:
            if node.left is None:
                node.left = Node(key)
                return root
            node = node.left
        else:
            if node.right is None:
                node.right = Node(key)
                return root
            node = node.right

def walk(node):
    while node is not None:
        for k in walk(node.left):
            yield k
        yield node.key
        node = node.right

def lcg(seed):
    while True:
        seed = (seed * 1103515245 + 12345) & 0x7fffffff
        yield seed

def words(rng, n):
    vocab = ['alpha', 'beta', 'gamma', 'delta', 'eps', 'zeta', 'eta', 'theta', 'iota', 'kappa']
    return [vocab[next(rng) % len(vocab)] for _ in range(n)]

def queens(n):
    count = [0]
    cols, d1, d2 = set(), set(), set()
    def place(r):
        if r == n:
            count[0] += 1
            return
        for c in range(n):
            if c in cols or (r + c) in d1 or (r - c) in d2:
                continue
            cols.add(c); d1.add(r + c); d2.add(r - c)
            place(r + 1)
            cols.remove(c); d1.remove(r + c); d2.remove(r - c)
    place(0)
    return count[0]

def parse_all(tokens):
    total, bad = 0, 0
    for t in tokens:
        try:
            total += int(t)
        except ValueError:
            bad += 1
    return total, bad

def round_(i, out):
    rng = lcg(i)
    root = None
    for _ in range(3000):
        root = insert(root, next(rng) % 100000)
    keys = list(walk(root))
    out.update(str(sum(keys[::7])).encode('ascii'))
    freq = {}
    for w in words(rng, 20000):
        freq[w] = freq.get(w, 0) + 1
    out.update(repr(sorted(freq.items())).encode('ascii'))
    text = ' '.join(words(rng, 5000))
    out.update(text.upper().replace('A', '4').encode('ascii'))
    out.update(str(queens(7)).encode('ascii'))
    tokens = [str(next(rng) % 1000) if next(rng) % 3 else 'x%d' % j for j in range(3000)]
    out.update(repr(parse_all(tokens)).encode('ascii'))

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 10
out = hashlib.sha256()
for i in range(scale):
    round_(i, out)
print('checksum jython %s' % out.hexdigest()[:32])
