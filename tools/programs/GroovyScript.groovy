def fib(n) { n < 2 ? n : fib(n-1) + fib(n-2) }
println((1..20).collect { fib(it) }.join(","))
class P { String name; int age; String toString() { "$name:$age" } }
def ps = [new P(name:"a", age:3), new P(name:"b", age:1)].sort { it.age }
println ps
println([a:1,b:2].collectEntries { k, v -> [k.toUpperCase(), v*10] })
