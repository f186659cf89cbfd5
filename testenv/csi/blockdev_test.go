package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A block volume staged and published on a real loop device (needs root and /dev/loop-control,
// as testenv's node plugin does): what is written through the published device is in the
// volume's data file once synced, a second node's loop device over the same file reads it, and
// unstaging clears both devices.
func TestBlockVolumeOnALoopDevice(t *testing.T) {
	root := t.TempDir()
	store, err := OpenStore(filepath.Join(root, "storage"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "blk"
	if _, err := store.CreateVolume(id, 4<<20); err != nil {
		t.Fatal(err)
	}
	a := &node{store: store, id: "node-a"}
	stagingA := filepath.Join(root, "staging-a")
	if err := a.stageBlock(id, stagingA); err != nil {
		t.Fatalf("staging: %v", err)
	}
	t.Cleanup(func() { _ = detachLoop(filepath.Join(stagingA, loopDevNode)) })
	if err := a.stageBlock(id, stagingA); err != nil {
		t.Fatalf("staging again (idempotent): %v", err)
	}
	st, err := os.Stat(filepath.Join(store.VolumeDir(id), BlockFile))
	if err != nil || st.Size() != 4<<20 {
		t.Fatalf("the data file: %v, size %v; want 4 MiB", err, st)
	}
	target := filepath.Join(root, "publish", "pod-uid")
	if err := publishBlock(stagingA, target, false); err != nil {
		t.Fatalf("publishing: %v", err)
	}
	t.Cleanup(func() { _ = unmount(target, true) })

	record := bytes.Repeat([]byte("nodedown"), 16)
	dev, err := os.OpenFile(target, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.WriteAt(record, 4096); err != nil {
		t.Fatalf("writing the device: %v", err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	data, err := os.ReadFile(filepath.Join(store.VolumeDir(id), BlockFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data[4096:4096+len(record)], record) {
		t.Fatalf("the data file does not hold what was written through the device")
	}

	b := &node{store: store, id: "node-b"}
	stagingB := filepath.Join(root, "staging-b")
	if err := b.stageBlock(id, stagingB); err != nil {
		t.Fatalf("staging on the second node: %v", err)
	}
	read := make([]byte, len(record))
	devB, err := os.Open(filepath.Join(stagingB, loopDevNode))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devB.ReadAt(read, 4096); err != nil {
		t.Fatal(err)
	}
	devB.Close()
	if !bytes.Equal(read, record) {
		t.Fatalf("the second node's device reads %q", read)
	}

	if err := unmount(target, true); err != nil {
		t.Fatal(err)
	}
	for _, staging := range []string{stagingA, stagingB} {
		devNode := filepath.Join(staging, loopDevNode)
		if backing, err := loopBacking(devNode); err != nil || backing == "" {
			t.Fatalf("%s before unstaging: backing %q, %v", devNode, backing, err)
		}
		if err := detachLoop(devNode); err != nil {
			t.Fatalf("unstaging: %v", err)
		}
		if _, err := os.Stat(devNode); !os.IsNotExist(err) {
			t.Fatalf("%s still there after unstaging", devNode)
		}
	}
}
