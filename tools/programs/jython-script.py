import re, json
def fib(n):
    return n if n < 2 else fib(n-1) + fib(n-2)
print([fib(i) for i in range(20)])
print(sorted({"b": 2, "a": 1}.items()))
print(re.sub(r"(\w+)@(\w+)", r"\2 at \1", "joe@example bob@test"))
print(json.dumps({"x": [1, 2, {"y": None}]}, sort_keys=True))
class A(object):
    def __init__(self, v): self.v = v
    def __repr__(self): return "A(%d)" % self.v
print([A(i) for i in range(3)])
