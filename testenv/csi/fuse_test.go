package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// fencedVolume makes a storage in a temporary directory with volume id, and serves it through
// the fenced data path at a mount point, as the node plugin of node (address 172.18.0.7) does;
// unmounted when the test ends.
func fencedVolume(tb testing.TB, id, node string) (*Store, string) {
	root := tb.TempDir()
	store, err := OpenStore(filepath.Join(root, "storage"))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := store.CreateVolume(id, 1<<30); err != nil {
		tb.Fatal(err)
	}
	watch, err := NewFenceWatch(store, "172.18.0.7")
	if err != nil {
		tb.Fatal(err)
	}
	mnt := filepath.Join(root, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		tb.Fatal(err)
	}
	srv, err := mountFenced(store.VolumeDir(id), mnt, id, node, watch)
	if err != nil {
		tb.Fatalf("mounting: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Unmount() })
	return store, mnt
}

// The fenced data path on a real FUSE mount (needs root and /dev/fuse, as testenv's node plugin
// does): a file opened before the fence fails its next write and fsync once the storage fences
// this client, new opens fail too, and the same open file writes again after the unfence.
func TestFenceRefusesAnOpenFileAtTheStorage(t *testing.T) {
	store, mnt := fencedVolume(t, "vol-1", "worker")

	f, err := os.OpenFile(filepath.Join(mnt, "ledger"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("before\n")); err != nil {
		t.Fatalf("write before the fence: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync before the fence: %v", err)
	}

	// Another client's fence does not touch this one.
	if err := store.SetFence([]string{"172.18.0.9/32"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("other fenced\n")); err != nil {
		t.Fatalf("write while another client is fenced: %v", err)
	}

	if err := store.SetFence([]string{"172.18.0.0/24"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("after\n")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write through the open file after the fence: %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync after the fence: %v, want EIO", err)
	}
	if _, err := os.OpenFile(filepath.Join(mnt, "new"), os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, syscall.EIO) {
		t.Fatalf("create after the fence: %v, want EIO", err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "ledger")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read after the fence: %v, want EIO", err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "ledger")); err != nil {
		t.Fatalf("stat after the fence (kept so the kubelet can unmount): %v", err)
	}
	// The storage recorded the first refusal (once per fence, not per operation).
	refusals, _, err := store.RefusalsSince(0)
	if err != nil || len(refusals) != 1 || refusals[0].Op != "write" || refusals[0].Volume != "vol-1" ||
		refusals[0].Node != "worker" || refusals[0].Addr != "172.18.0.7" {
		t.Fatalf("refusals recorded: %+v, %v; want one: the write on vol-1 of worker", refusals, err)
	}

	if err := store.SetFence([]string{"172.18.0.0/24"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("unfenced\n")); err != nil {
		t.Fatalf("write after the unfence: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(store.VolumeDir("vol-1"), "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "before\nother fenced\nunfenced\n"; string(got) != want {
		t.Fatalf("the storage holds %q, want %q (nothing written while fenced)", got, want)
	}
}

func TestFenceTableIsCanonicalAndIdempotent(t *testing.T) {
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := store.SetFence([]string{"10.0.0.7", "10.1.2.3/16"}, true); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := store.Fences()
	if len(got) != 2 || got[0] != "10.0.0.7/32" || got[1] != "10.1.0.0/16" {
		t.Fatalf("fences %v", got)
	}
	if err := store.SetFence([]string{"not-an-address"}, true); err == nil {
		t.Fatal("a bad block was accepted")
	}
	if err := store.SetFence([]string{"10.0.0.7/32"}, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Fences(); len(got) != 1 || got[0] != "10.1.0.0/16" {
		t.Fatalf("after unfence: %v", got)
	}
}

// The data path's cost on the ledger's durable append (one 256-byte record written, then
// fdatasync'd, as workload::ledger does): straight to the storage directory (what the bind
// mount gives a pod) and through the fenced FUSE data path. `go test -bench DurableAppend
// -run '^$'` prints appends/s for both.
func benchmarkAppends(b *testing.B, dir string) {
	f, err := os.OpenFile(filepath.Join(dir, "ledger.bin"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	record := make([]byte, 256)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(record); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

func BenchmarkDurableAppendBind(b *testing.B) {
	benchmarkAppends(b, b.TempDir())
}

func BenchmarkDurableAppendFuse(b *testing.B) {
	_, mnt := fencedVolume(b, "bench", "bench-node")
	benchmarkAppends(b, mnt)
}
