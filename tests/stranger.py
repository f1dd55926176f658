#!/usr/bin/env python3
"""A process that does not belong to a railcoll job and tries to talk to it.

  stranger.py store HOST:PORT KIND [KEY JOB [RANK]]
                                               KIND: garbage | nokey | wrongkey | otherjob | good;
                                               RANK: the rank it says it is (default 0, which is
                                               always in: a refusal then fails no one's start-up)
  stranger.py data HOST:PORT KIND JOB [READY]  KIND: garbage | silent | wrongkey | otherjob
                                               (READY: a file made once connected and sent)
  stranger.py hmac KEY HEXMSG                  print HMAC-SHA256 (to cross-check railcoll's)

Prints one line saying what it did and what came back. `store ... good` uses the
right key and job and expects to be accepted (a control that the protocol is
spoken correctly, so a refusal of the others is not an accident)."""
import hashlib
import hmac
import os
import socket
import struct
import sys

MAGIC, VERSION, HELLO = 0x52434C31, 3, 1  # kWireMagic, kWireVersion, Frame::Hello (runtime/wire.hpp)
HEADER = struct.Struct("<IHHQQQiiHHIQQQ")  # runtime/wire.hpp FrameHeader, 72 bytes


def fnv(s):
    h = 1469598103934665603
    for c in s.encode():
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def connect(hp):
    host, port = hp.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    return s


def read_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            return out
        out += chunk
    return out


def closed_by_peer(s, wait=10):
    """True when the other side closes (what a refusal looks like; the store
    says why first, in one line, which is read and dropped)."""
    s.settimeout(wait)
    try:
        while True:
            if s.recv(4096) == b"":
                return True
    except socket.timeout:
        return False
    except OSError:  # reset: closed with our bytes unread
        return True


def send(s, data):
    """Sends; a peer that already closed (a reset) is not an error here: the
    refusal is what the caller checks for next."""
    try:
        s.sendall(data)
    except OSError:
        pass


def store(hp, kind, key="", job="", rank="0"):
    s = connect(hp)
    challenge = read_exact(s, 20)
    if challenge[:4] != b"RCS3":
        return "store: no challenge"
    nonce = challenge[4:]
    if kind == "garbage":
        send(s, os.urandom(64))
    elif kind == "nokey":  # the pre-authentication protocol: a plain get
        body = b"Gc0/job"
        send(s, struct.pack("<I", len(body)) + body)
    else:
        use_key = "not-the-key" if kind == "wrongkey" else key
        use_job = "another-job" if kind == "otherjob" else job
        mine = os.urandom(16)
        claim = struct.pack("<i", int(rank))
        msg = b"railcoll store client\0" + use_job.encode() + b"\0" + nonce + mine + claim
        proof = hmac.new(use_key.encode(), msg, hashlib.sha256).digest()
        send(s, b"RCA3" + mine + proof + claim + struct.pack("<H", len(use_job)) + use_job.encode())
        if kind == "good":
            ok = read_exact(s, 36)
            return "store good: " + ("accepted" if ok[:4] == b"RCO3" else "refused")
    return "store %s: %s" % (kind, "closed by the store" if closed_by_peer(s) else "STILL OPEN")


def data(hp, kind, job, ready=None):
    s = connect(hp)
    if kind == "garbage":
        send(s, os.urandom(200))
    elif kind in ("wrongkey", "otherjob"):
        comm = fnv(job if kind == "wrongkey" else "another-job")  # communicator 0 of the job
        hdr = HEADER.pack(MAGIC, VERSION, HELLO, comm, 1, 0, 0, 0, 0, 0, 0, 0, 32, 0)
        send(s, hdr + hmac.new(b"not-the-key", hdr, hashlib.sha256).digest())
    # silent: says nothing; the rank must close it after its hello deadline
    if ready:
        open(ready, "w").close()
    return "data %s %s: %s" % (kind, hp, "closed by the rank" if closed_by_peer(s) else "STILL OPEN")


def main(argv):
    if argv[1] == "hmac":
        print(hmac.new(argv[2].encode(), bytes.fromhex(argv[3]), hashlib.sha256).hexdigest())
    elif argv[1] == "store":
        print(store(argv[2], argv[3], *argv[4:7]))
    elif argv[1] == "data":
        print(data(argv[2], argv[3], argv[4], *argv[5:6]))


if __name__ == "__main__":
    main(sys.argv)
