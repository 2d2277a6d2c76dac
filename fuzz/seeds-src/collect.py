#!/usr/bin/env python3
"""Rebuilds fuzz/corpus/read_patch/ from the sources here, the test samples, the JDK 17
jmods and Debian jars. Usage (from fuzz/seeds-src): ./collect.py COMPILED_DIR
where COMPILED_DIR holds the classes compiled as fuzz/README.md describes."""
import io
import os
import shutil
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "corpus", "read_patch")
SAMPLES = os.path.join(HERE, "..", "..", "crates", "classfile", "tests", "data", "valid")
JMODS = "/usr/lib/jvm/java-17-openjdk-amd64/jmods"
JARS = "/usr/share/java"

COMPILED = ["Tricky", "Switches", "Switches$Circle", "Switches$Color", "Switches$Shape", "BigMethod", "JsrRet"]
OURS = ["Hello", "Kitchen", "Kitchen$Point", "Info", "module-info"]
JDK = {
    "java.base": [
        "java/lang/Object",  # natives
        "java/lang/Record",
        "java/lang/Thread$State",  # enum
        "java/lang/Thread",  # synchronized methods
        "java/lang/Integer",  # switches, big tables
        "java/lang/Math",
        "java/lang/StringBuilder",  # bridge methods
        "java/util/ArrayList$Itr",  # nest member
        "java/util/Vector",  # synchronized
        "java/util/concurrent/atomic/AtomicInteger",
        "java/lang/constant/ConstantDesc",  # sealed: PermittedSubclasses
        "java/io/ObjectInputStream$FilterValues",  # record
        "module-info",  # ModuleHashes, ModuleTarget, ModulePackages
    ],
    "jdk.incubator.vector": ["module-info"],  # ModuleResolution
}
DEBIAN = [
    ("groovy-2.4.21.jar", "org/codehaus/groovy/runtime/dgm$500"),  # version 47
    ("jython-2.7.3.jar", "org/python/core/PySet$exposed___new__"),  # version 49, CLDC StackMap
    ("scala-library-2.11.12.jar", "scala/Dynamic"),  # ScalaSig
    ("guice.jar", "com/google/inject/internal/cglib/core/$AbstractClassGenerator$ClassLoaderData"),  # 50
    ("antlr-2.7.7.jar", "antlr/ANTLRTokdefParser"),  # 51
    ("ant-1.10.13.jar", "org/apache/tools/ant/DemuxOutputStream"),  # 52, lambdas
    ("gettext.jar", "gnu/gettext/DumpResource"),  # 55
]


def put(name, data):
    with open(os.path.join(OUT, name.replace("/", ".").replace("$", "_") + ".class"), "wb") as f:
        f.write(data)


def main():
    compiled = sys.argv[1]
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for name in COMPILED:
        put("seed-" + name, open(os.path.join(compiled, name + ".class"), "rb").read())
    for name in OURS:
        put("sample-" + name, open(os.path.join(SAMPLES, name + ".class"), "rb").read())
    for module, names in JDK.items():
        with open(os.path.join(JMODS, module + ".jmod"), "rb") as f:
            assert f.read(4) == b"JM\x01\x00"
            jmod = zipfile.ZipFile(io.BytesIO(f.read()))
        for name in names:
            put(f"jdk17-{module}-{name}", jmod.read(f"classes/{name}.class"))
    for jar, name in DEBIAN:
        put(f"debian-{jar[:-4]}-{name}", zipfile.ZipFile(os.path.join(JARS, jar)).read(name + ".class"))
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"{len(os.listdir(OUT))} seeds, {total} bytes")


main()
