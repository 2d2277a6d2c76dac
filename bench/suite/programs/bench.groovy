// Groovy workload: dynamic dispatch, closures, collections, GStrings, metaprogramming and
// exceptions, repeated SCALE times; prints a checksum of everything it computed.
import java.security.MessageDigest

class Account {
    String owner
    BigDecimal balance = 0
    def deposit(x) { balance += x; this }
    def withdraw(x) {
        if (x > balance) throw new IllegalStateException("insufficient funds for $owner")
        balance -= x
        this
    }
}

long seed = 1
def next = { int bound -> seed = (seed * 6364136223846793005L + 1442695040888963407L); (int) ((seed >>> 33) % bound) }
def vocab = ['alpha', 'beta', 'gamma', 'delta', 'eps', 'zeta', 'eta', 'theta', 'iota', 'kappa']
def scale = args.length > 0 ? args[0] as int : 10
def md = MessageDigest.getInstance('SHA-256')
def add = { Object o -> md.update(o.toString().getBytes('UTF-8')) }

def fib
fib = { int n -> n < 2 ? n : fib(n - 1) + fib(n - 2) }

scale.times { round ->
    def accounts = (0..<200).collect { new Account(owner: "acct$it") }
    int failed = 0
    20000.times {
        def a = accounts[next(200)]
        try {
            if (next(2) == 0) a.deposit(next(1000)) else a.withdraw(next(800))
        } catch (IllegalStateException e) {
            failed++
        }
    }
    add(failed)
    add(accounts.sum { it.balance })
    def words = (0..<20000).collect { vocab[next(vocab.size())] }
    def freq = words.groupBy { it }.collectEntries { k, v -> [k, v.size()] }.sort()
    add(freq)
    add(words.findAll { it.length() > 4 }.collect { it.reverse().toUpperCase() }.join(',').length())
    add((1..2000).inject(0G) { acc, v -> acc + v * v })
    add(fib(20))
    def sorted = (0..<20000).collect { next(100000) }.sort()
    add(sorted[0..<100])
    def sb = new StringBuilder()
    (0..<2000).each { sb << "${it}:${vocab[it % vocab.size()]};" }
    add(sb.toString().hashCode())
}
println "checksum groovy ${md.digest().encodeHex().toString()[0..<32]}"
