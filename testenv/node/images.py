#!/usr/bin/env python3
"""Writes one docker-archive tarball holding the images kubeadm needs, without a registry or a
builder: control-plane components and etcd (all from the one multi-call binary, sharing one
layer) and pause (Debian's static catatonit). `ctr images import` reads it in every node.

usage: images.py OUT.tar K8S_BINARY CATATONIT BUSYBOX [--binary-image REF BINARY]... IMAGE_REF...
Image refs are matched by name: kube-apiserver, kube-controller-manager, kube-scheduler,
kube-proxy and etcd get the binary layer; pause gets catatonit. Others (coredns) are skipped
with a message. Also written: nodedown.local/busybox:testenv (Debian's static busybox with
its applets), the small image with a shell that testenv's own tests run, and one image per
`--binary-image REF BINARY`: that static binary alone, at /BASENAME, as the entrypoint (the CSI
driver and the external-attacher).
"""
import os
import hashlib
import io
import json
import subprocess
import sys
import tarfile

BUSYBOX_REF = "nodedown.local/busybox:testenv"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def tar_layer(entries):
    """entries: list of (name, kind, payload, mode); kind is file|dir|symlink. Deterministic."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, kind, payload, mode in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.mode = mode
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = payload
                tar.addfile(info)
            else:
                with open(payload, "rb") as f:
                    data = f.read()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main():
    out, k8s_bin, catatonit, busybox, *rest = sys.argv[1:]
    binary_images = {}  # ref -> (layer, entrypoint)
    while len(rest) >= 3 and rest[0] == "--binary-image":
        ref, path = rest[1], rest[2]
        base = os.path.basename(path)
        binary_images[ref] = (tar_layer([("tmp", "dir", None, 0o1777), (base, "file", path, 0o755)]), ["/" + base])
        rest = rest[3:]
    refs = rest
    commands = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "etcd"]
    k8s_layer = tar_layer(
        [("usr", "dir", None, 0o755), ("usr/local", "dir", None, 0o755),
         ("usr/local/bin", "dir", None, 0o755), ("tmp", "dir", None, 0o1777),
         ("var", "dir", None, 0o755), ("var/run", "dir", None, 0o755),
         ("usr/local/bin/nodedown-k8s", "file", k8s_bin, 0o755)]
        + [("usr/local/bin/" + c, "symlink", "nodedown-k8s", 0o777) for c in commands]
    )
    pause_layer = tar_layer([("pause", "file", catatonit, 0o755)])
    applets = subprocess.run([busybox, "--list"], check=True, capture_output=True, text=True).stdout.split()
    busybox_layer = tar_layer(
        [("bin", "dir", None, 0o755), ("tmp", "dir", None, 0o1777), ("data", "dir", None, 0o755),
         ("bin/busybox", "file", busybox, 0o755)]
        + [("bin/" + a, "symlink", "busybox", 0o777) for a in applets if a != "busybox"]
    )
    refs = refs + [BUSYBOX_REF] + list(binary_images)
    layers = {}  # digest -> bytes
    manifest = []
    for ref in refs:
        name = ref.rsplit(":", 1)[0].rsplit("/", 1)[-1]
        if name in commands:
            layer, entrypoint = k8s_layer, None
        elif name == "pause":
            layer, entrypoint = pause_layer, ["/pause", "-P"]
        elif ref in binary_images:
            layer, entrypoint = binary_images[ref]
        elif ref == BUSYBOX_REF:
            layer, entrypoint = busybox_layer, ["/bin/sh"]
        else:
            print(f"images.py: skipping {ref} (not built here)", file=sys.stderr)
            continue
        digest = hashlib.sha256(layer).hexdigest()
        layers[digest] = layer
        config = {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": [PATH_ENV], "WorkingDir": "/"},
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + digest]},
            "history": [{"created_by": "nodedown testenv images.py"}],
        }
        if entrypoint:
            config["config"]["Entrypoint"] = entrypoint
        config_bytes = json.dumps(config, sort_keys=True).encode()
        config_digest = hashlib.sha256(config_bytes).hexdigest()
        layers[config_digest + ".json"] = config_bytes
        manifest.append({"Config": config_digest + ".json", "RepoTags": [ref],
                         "Layers": [digest + "/layer.tar"]})
    with tarfile.open(out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        for key, data in layers.items():
            add(key if key.endswith(".json") else key + "/layer.tar", data)
        add("manifest.json", json.dumps(manifest).encode())
    print(f"images.py: wrote {len(manifest)} images to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
