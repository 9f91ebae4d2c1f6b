#!/usr/bin/env python3
"""Independent re-implementation of the Weft request-state envelope and
keyring fingerprint (profile weft-request-state-v1), used to cross-check
testdata/vectors.json. Requires the 'cryptography' package.

    python3 testdata/crosscheck.py testdata/vectors.json
"""
import base64, hashlib, hmac, json, struct, sys
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

def b64u(b): return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
def u32(n): return struct.pack(">I", n)

def seal(key_id, secret, nonce, binding, plaintext):
    kid = key_id.encode()
    aead_key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"weft-request-state-salt-v1",
                    info=b"weft-request-state-aead-v1\x00" + kid).derive(secret)
    header = bytes([1, len(kid)]) + kid
    aad = b"weft-request-state-aad-v1\x00" + u32(len(header)) + header + u32(len(binding)) + binding
    env = header + nonce + AESGCM(aead_key).encrypt(nonce, plaintext, aad)
    return aead_key, header, aad, env, "weft1." + b64u(env)

def fingerprint(active, verification):
    profile = b"weft-request-state-v1"
    fkey_key = hashlib.sha256(b"weft-key-fingerprint-v1\x00").digest()
    recs = []
    for (kid, secret), role in [(active, 1)] + [(k, 2) for k in verification]:
        kid = kid.encode()
        fkey = hmac.new(fkey_key, secret, hashlib.sha256).digest()
        md = u32(len(kid)) + kid + u32(len(profile)) + profile + bytes([role])
        tag = hmac.new(fkey, b"weft-key-fingerprint-tag-v1\x00" + md, hashlib.sha256).digest()
        recs.append((md, tag))
    recs.sort(key=lambda r: r[0])
    h = hashlib.sha256(b"weft-keyring-fingerprint-v1\x00" + u32(len(recs)))
    for md, tag in recs:
        h.update(u32(len(md)) + md + tag)
    return "v1:weft-request-state-v1:" + b64u(h.digest())

vf = json.load(open(sys.argv[1]))
ok = True
for v in vf["envelope"]:
    got = seal(v["keyID"], bytes.fromhex(v["secretHex"]), bytes.fromhex(v["nonceHex"]),
               bytes.fromhex(v["bindingHex"]), bytes.fromhex(v["plaintextHex"]))
    want = (bytes.fromhex(v["aeadKeyHex"]), bytes.fromhex(v["headerHex"]), bytes.fromhex(v["aadHex"]),
            bytes.fromhex(v["envelopeHex"]), v["token"])
    match = got == want
    ok &= match
    print("envelope", v["name"], "OK" if match else "MISMATCH")
for f in vf["fingerprints"]:
    key = lambda k: (k["id"], bytes.fromhex(k["secretHex"]))
    got = fingerprint(key(f["active"]), [key(k) for k in f["verification"]])
    match = got == f["fingerprint"]
    ok &= match
    print("fingerprint", f["name"], "OK" if match else "MISMATCH " + got)
sys.exit(0 if ok else 1)
