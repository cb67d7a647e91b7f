#!/usr/bin/env python3
"""Derives the broker.conf keys Apache RocketMQ's broker accepts from its
Java sources and writes them as a Rust table (facts, not code).

Usage: scripts/java-config-keys.py MIRROR_GIT_DIR [TAG] > broker/src/config/java_keys.rs
       scripts/java-config-keys.py --namesrv MIRROR_GIT_DIR [TAG] > broker/src/config/namesrv_keys.rs

MIRROR_GIT_DIR is a git directory of github:apache/rocketmq (a bare mirror
is enough: files are read with `git show TAG:path`); TAG defaults to
rocketmq-all-5.3.3.

What makes a key (docs/timer-and-5x-facts.md section 9): BrokerStartup
applies broker.conf to BrokerConfig (with its superclass BrokerIdentity),
NettyServerConfig, NettyClientConfig, MessageStoreConfig and AuthConfig
through MixAll.properties2Object, which calls every public one-argument
`set*` method whose parameter is a primitive, its box or String; the key
is the method name without `set`, first letter lower-cased. So this script
reads those methods, not the fields. The default of a key is the
initializer of the field its setter assigns, evaluated where it is a
constant (arithmetic, other classes' constants, System.getProperty's
fallback); defaults that depend on the machine (processor count, local
address, user.home) are left unevaluated.

With --namesrv it writes the keys of NamesrvConfig instead: NamesrvStartup
applies namesrv.conf to NamesrvConfig, NettyServerConfig, NettyClientConfig
(both already in the broker's table) and, with enableControllerInNamesrv,
ControllerConfig (the controller crate's own list).
"""

import re
import subprocess
import sys

CLASSES = [
    ("BrokerIdentity", "common/src/main/java/org/apache/rocketmq/common/BrokerIdentity.java"),
    ("BrokerConfig", "common/src/main/java/org/apache/rocketmq/common/BrokerConfig.java"),
    ("NettyServerConfig", "remoting/src/main/java/org/apache/rocketmq/remoting/netty/NettyServerConfig.java"),
    ("NettyClientConfig", "remoting/src/main/java/org/apache/rocketmq/remoting/netty/NettyClientConfig.java"),
    ("MessageStoreConfig", "store/src/main/java/org/apache/rocketmq/store/config/MessageStoreConfig.java"),
    ("AuthConfig", "auth/src/main/java/org/apache/rocketmq/auth/config/AuthConfig.java"),
]

NAMESRV_CLASSES = [
    ("NamesrvConfig", "common/src/main/java/org/apache/rocketmq/common/namesrv/NamesrvConfig.java"),
]

# Parameter types properties2Object converts (others are skipped by Java).
SETTABLE = {"int", "Integer", "long", "Long", "double", "Double", "float",
            "Float", "boolean", "Boolean", "String"}

# Constants of classes outside the RocketMQ sources (the JDK, RocksJava).
EXTERNAL = {
    "Integer.MAX_VALUE": 2147483647,
    "Long.MAX_VALUE": 9223372036854775807,
    "Byte.MAX_VALUE": 127,
    "File.separator": "/",
    "SizeUnit.KB": 1024,
    "SizeUnit.MB": 1024 ** 2,
    "SizeUnit.GB": 1024 ** 3,
    "CompressionType.ZSTD_COMPRESSION.getLibraryName()": "zstd",
    "CompressionType.LZ4_COMPRESSION.getLibraryName()": "lz4",
    "CompressionType.NO_COMPRESSION.getLibraryName()": None,
}

TIME_UNITS = {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000,
              "HOURS": 3_600_000, "DAYS": 86_400_000}

MIRROR = None
TAG = "rocketmq-all-5.3.3"
_files = {}
_class_paths = None


def show(path):
    if path not in _files:
        _files[path] = subprocess.run(
            ["git", "-C", MIRROR, "show", f"{TAG}:{path}"],
            check=True, capture_output=True, text=True).stdout
    return _files[path]


def class_path(name):
    """The main-source file declaring class or enum `name`, if any."""
    global _class_paths
    if _class_paths is None:
        out = subprocess.run(["git", "-C", MIRROR, "ls-tree", "-r", "--name-only", TAG],
                             check=True, capture_output=True, text=True).stdout
        _class_paths = {}
        for p in out.splitlines():
            if p.endswith(".java") and "/src/main/java/" in p:
                _class_paths.setdefault(p.rsplit("/", 1)[1][:-5], p)
    return _class_paths.get(name)


def strip_comments(src):
    """Removes comments, keeping string literals intact."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            i = src.find("\n", i)
            i = n if i < 0 else i
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def class_body(src):
    """The text between the braces of the file's top-level type."""
    src = strip_comments(src)
    m = re.search(r"\b(class|enum)\s+\w+[^{]*\{", src)
    start = m.end()
    depth, i = 1, start
    while depth:
        if src[i] == '"':
            i = src.index('"', i + 1)
        elif src[i] == "{":
            depth += 1
        elif src[i] == "}":
            depth -= 1
        i += 1
    return src[start:i - 1]


def members(body):
    """Splits a class body into ('decl', text) and ('block', header, body)."""
    out, buf, i, n = [], [], 0, len(body)
    paren = 0
    while i < n:
        c = body[i]
        if c == '"':
            j = i + 1
            while body[j] != '"':
                j += 2 if body[j] == "\\" else 1
            buf.append(body[i:j + 1])
            i = j + 1
            continue
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        if c == ";" and paren == 0:
            out.append(("decl", "".join(buf).strip()))
            buf = []
        elif c == "{" and paren == 0:
            depth, j = 1, i + 1
            while depth:
                if body[j] == '"':
                    j = body.index('"', j + 1)
                elif body[j] == "{":
                    depth += 1
                elif body[j] == "}":
                    depth -= 1
                j += 1
            header = "".join(buf).strip()
            if re.search(r"=\s*$", header) or "=" in header and "(" not in header.split("=")[0]:
                # An array initializer in a field: keep it as a declaration.
                buf.append(body[i:j])
                i = j
                continue
            out.append(("block", header, body[i + 1:j - 1]))
            buf = []
            i = j
            continue
        else:
            buf.append(c)
        i += 1
    return out


ANNOTATION = re.compile(r"@\w+(\([^)]*\))?")
MODIFIERS = {"private", "protected", "public", "static", "final", "volatile", "transient"}


def parse_class(path):
    """Fields (name -> (type, initializer, static)) and the public setters."""
    fields, setters = {}, []
    for m in members(class_body(show(path))):
        if m[0] == "decl":
            text = ANNOTATION.sub("", m[1]).strip()
            lhs, _, init = text.partition("=")
            words = lhs.split()
            if len(words) < 2 or "(" in lhs:
                continue
            mods = [w for w in words if w in MODIFIERS]
            rest = [w for w in words if w not in MODIFIERS]
            if len(rest) != 2:
                continue
            ftype, name = rest
            fields[name] = (ftype, " ".join(init.split()) if init else None, "static" in mods)
        else:
            header = ANNOTATION.sub("", m[1]).strip()
            hm = re.match(r"(?P<mods>(?:\w+\s+)*)(?P<ret>[\w<>\[\]]+)\s+(?P<name>set\w+)\s*\((?P<params>[^)]*)\)", header)
            if not hm:
                continue
            mods = hm.group("mods").split()
            if "public" not in mods or "static" in mods:
                continue
            params = [p for p in hm.group("params").split(",") if p.strip()]
            if len(params) != 1:
                continue
            ptype = [w for w in params[0].split() if w != "final"][0]
            setters.append((hm.group("name"), ptype, m[2]))
    return fields, setters


# ---- evaluation of field initializers -------------------------------------

class Unknown(Exception):
    pass


def resolve_symbol(sym, own_fields):
    if sym in EXTERNAL:
        if EXTERNAL[sym] is None:
            raise Unknown(sym)
        return EXTERNAL[sym]
    if "." not in sym:
        if sym in own_fields and own_fields[sym][1] is not None:
            return evaluate(own_fields[sym][1], own_fields, own_fields[sym][0])
        raise Unknown(sym)
    cls, _, member = sym.partition(".")
    path = class_path(cls)
    if path is None:
        raise Unknown(sym)
    src = strip_comments(show(path))
    if re.search(rf"\benum\s+{cls}\b", src):
        name, _, getter = member.partition(".")
        if not getter:
            return name  # the enum constant's name, what valueOf takes
        args = re.search(rf"\b{name}\s*\(\s*\"([^\"]*)\"", src)
        if args:
            return args.group(1)
        raise Unknown(sym)
    fields, _ = parse_class(path)
    if member in fields and fields[member][1] is not None:
        return evaluate(fields[member][1], fields, fields[member][0])
    raise Unknown(sym)


TOKEN = re.compile(r"""\s*(?:
    (?P<hex>0[xX][0-9a-fA-F_]+[Ll]?)
  | (?P<num>\d[\d_]*(?:\.\d+)?[LlFfDd]?)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<call>System\.getProperty|System\.getenv|Integer\.parseInt|Long\.parseLong|Boolean\.parseBoolean|
      Math\.min|Math\.max|TimeUnit\.\w+\.to\w+|String\.valueOf)
  | (?P<sym>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*(?:\(\))?)*)
  | (?P<op><<|[-+*/|&(),])
)""", re.X)


def tokens(expr):
    out, i = [], 0
    while i < len(expr):
        m = TOKEN.match(expr, i)
        if not m or m.end() == i:
            if expr[i:].strip() == "":
                break
            raise Unknown(expr)
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        i = m.end()
    return out


def evaluate(expr, own_fields, ftype=None):
    toks = tokens(expr)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else (None, None)

    def take(v=None):
        t = peek()
        if v is not None and t[1] != v:
            raise Unknown(expr)
        pos[0] += 1
        return t

    def args():
        take("(")
        out = []
        if peek()[1] != ")":
            out.append(bor())
            while peek()[1] == ",":
                take(",")
                out.append(bor())
        take(")")
        return out

    def atom():
        kind, v = take()
        if kind == "hex":
            return int(v.rstrip("Ll").replace("_", ""), 16)
        if kind == "num":
            if "." in v or v[-1] in "FfDd":
                return float(v.rstrip("FfDd"))
            return int(v.rstrip("Ll").replace("_", ""))
        if kind == "str":
            return bytes(v[1:-1], "utf-8").decode("unicode_escape")
        if v == "(":
            r = bor()
            take(")")
            return r
        if v == "-":
            return -atom()
        if kind == "call":
            a = args()
            if v in ("System.getProperty",):
                if len(a) < 2 or a[1] is None:
                    raise Unknown(expr)
                return a[1]
            if v == "System.getenv":
                raise Unknown(expr)
            if v == "Integer.parseInt" or v == "Long.parseLong":
                return int(a[0])
            if v == "Boolean.parseBoolean":
                return str(a[0]).lower() == "true"
            if v == "String.valueOf":
                return a[0]
            if v == "Math.min":
                return min(a)
            if v == "Math.max":
                return max(a)
            unit = v.split(".")[1]
            target = v.split(".")[2]
            if target != "toMillis" or unit not in TIME_UNITS:
                raise Unknown(expr)
            return a[0] * TIME_UNITS[unit]
        if kind == "sym":
            if v in ("true", "false"):
                return v == "true"
            if v == "null":
                return None
            return resolve_symbol(v, own_fields)
        raise Unknown(expr)

    def mul():
        r = atom()
        while peek()[1] in ("*", "/"):
            op = take()[1]
            b = atom()
            if op == "*":
                r = r * b
            elif isinstance(r, int) and isinstance(b, int):
                r = int(r / b)
            else:
                r = r / b
        return r

    def add():
        r = mul()
        while peek()[1] in ("+", "-"):
            op = take()[1]
            b = mul()
            if op == "+":
                r = (str(r) + str(b)) if isinstance(r, str) or isinstance(b, str) else r + b
            else:
                r = r - b
        return r

    def shift():
        r = add()
        while peek()[1] == "<<":
            take()
            r = r << add()
        return r

    def bor():
        r = shift()
        while peek()[1] in ("|", "&"):
            op = take()[1]
            b = shift()
            r = r | b if op == "|" else r & b
        return r

    value = bor()
    if pos[0] != len(toks):
        raise Unknown(expr)
    if ftype in ("int", "Integer") and isinstance(value, int):
        value = (value + 2 ** 31) % 2 ** 32 - 2 ** 31
    return value


JAVA_ZERO = {"int": 0, "Integer": None, "long": 0, "Long": None, "double": 0.0,
             "Double": None, "float": 0.0, "Float": None, "boolean": False,
             "Boolean": None}


def text_of(value, ftype):
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if ftype in ("double", "Double", "float", "Float"):
        return repr(float(value))
    return str(value)


def rust_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    global MIRROR, TAG
    args = sys.argv[1:]
    namesrv = bool(args) and args[0] == "--namesrv"
    if namesrv:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    MIRROR = args[0]
    if len(args) > 1:
        TAG = args[1]
    rows = []
    for cls, path in (NAMESRV_CLASSES if namesrv else CLASSES):
        fields, setters = parse_class(path)
        by_key = {}
        for name, ptype, body in setters:
            if ptype not in SETTABLE:
                continue
            key = name[3].lower() + name[4:]
            by_key.setdefault(key, []).append((ptype, body))
        for key, overloads in by_key.items():
            target = None
            for _, body in overloads:
                m = re.search(r"(?:this\.)?(\w+)\s*=[^=]", body)
                if m and m.group(1) in fields:
                    target = m.group(1)
                    break
            if target is None and key in fields:
                target = key
            ftype, init, _ = fields.get(target, (overloads[0][0], None, False))
            if init is None:
                expr = ""
                value = JAVA_ZERO.get(ftype)
            else:
                expr = init
                try:
                    value = evaluate(init, fields, ftype)
                except (Unknown, ValueError, ZeroDivisionError, TypeError):
                    value = None
            java_type = " | ".join(p for p, _ in overloads)
            rows.append((key, cls, java_type, expr, text_of(value, ftype)))
    if namesrv:
        out, const = "namesrv_keys.rs", "NAMESRV_KEYS"
        doc = ["Every key of Apache RocketMQ's NamesrvConfig, as its NameServer takes",
               "them from namesrv.conf (NettyServerConfig's and NettyClientConfig's are",
               "in `java_keys.rs`, ControllerConfig's in the controller crate). `default`",
               "is the field's value after construction where it does not depend on the",
               "machine (`None`: machine-dependent, or a null String)."]
        flag = "--namesrv "
    else:
        out, const = "java_keys.rs", "JAVA_KEYS"
        doc = ["Every key Apache RocketMQ's broker takes from broker.conf: the public",
               "one-argument setters of primitive, boxed or String type of its five",
               "config classes, one row per (class, key), in source order. `default` is",
               "the field's value after construction where it does not depend on the",
               "machine (`None`: machine-dependent, or a null String)."]
        flag = ""
    print("// @generated by scripts/java-config-keys.py from github:apache/rocketmq")
    print(f"// at {TAG}; do not edit. Regenerate with:")
    print(f"//   python3 scripts/java-config-keys.py {flag}<mirror git dir> > broker/src/config/{out}")
    print()
    for line in doc:
        print(f"//! {line}")
    print()
    print("use super::java::{JavaClass, JavaKey};")
    print()
    print("/// The keys, one row per (class, key).")
    print("#[rustfmt::skip]")
    print(f"pub const {const}: &[JavaKey] = &[")
    for key, cls, jtype, expr, value in rows:
        v = "None" if value is None else f"Some({rust_str(value)})"
        print(f"    JavaKey {{ key: {rust_str(key)}, class: JavaClass::{cls}, java_type: {rust_str(jtype)}, "
              f"default_expr: {rust_str(expr)}, default: {v} }},")
    print("];")
    distinct = len({r[0] for r in rows})
    print(f"java-config-keys: {len(rows)} rows, {distinct} distinct keys", file=sys.stderr)


if __name__ == "__main__":
    main()
