package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
)

// The fence table is the storage's blocklist: the CIDR blocks whose clients it refuses.
//
//	fences.json         ["172.18.0.5/32", ...], replaced atomically (written, then renamed)
//	clients/<node>      the address a node plugin reaches the storage from (its "client")
//
// FenceClusterNetwork and UnfenceClusterNetwork edit it under the store's lock; the fenced data
// path (fuse.go) reads it before every operation it serves.

func (s *Store) fencePath() string { return filepath.Join(s.root, "fences.json") }

// ParseCIDRs checks each block (an address alone means that one address) and returns them in
// canonical form.
func ParseCIDRs(blocks []string) ([]string, error) {
	out := make([]string, 0, len(blocks))
	for _, b := range blocks {
		p, err := netip.ParsePrefix(b)
		if err != nil {
			a, aerr := netip.ParseAddr(b)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR block (like 172.18.0.5/32): %w", b, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked().String())
	}
	return out, nil
}

// Fences lists the fenced CIDR blocks.
func (s *Store) Fences() ([]string, error) {
	b, err := os.ReadFile(s.fencePath())
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var blocks []string
	if err := json.Unmarshal(b, &blocks); err != nil {
		return nil, fmt.Errorf("%s: %w", s.fencePath(), err)
	}
	return blocks, nil
}

// SetFence adds (fenced) or removes (!fenced) the blocks. Idempotent.
func (s *Store) SetFence(blocks []string, fenced bool) error {
	canon, err := ParseCIDRs(blocks)
	if err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	current, err := s.Fences()
	if err != nil {
		return err
	}
	set := map[string]bool{}
	for _, c := range current {
		set[c] = true
	}
	for _, c := range canon {
		if fenced {
			set[c] = true
		} else {
			delete(set, c)
		}
	}
	next := make([]string, 0, len(set))
	for c := range set {
		next = append(next, c)
	}
	sort.Strings(next)
	b, _ := json.Marshal(next)
	tmp := s.fencePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.fencePath())
}

// Refusal is one refused operation of a fenced client, as the storage records it
// (refusals.jsonl): the first per volume and fence.
type Refusal struct {
	Node   string `json:"node"`
	Addr   string `json:"address"`
	Volume string `json:"volume"`
	Op     string `json:"op"`
	At     string `json:"at"` // RFC 3339, nanoseconds
}

func (s *Store) refusalsPath() string { return filepath.Join(s.root, "refusals.jsonl") }

// RecordRefusal appends r to the storage's record of refusals (one line, one write).
func (s *Store) RecordRefusal(r Refusal) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.refusalsPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(append(b, '\n'))
	return err
}

// RefusalsSince reads the refusals recorded from byte offset on; returns them and the offset
// after the last whole line.
func (s *Store) RefusalsSince(offset int64) ([]Refusal, int64, error) {
	f, err := os.Open(s.refusalsPath())
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, offset, err
	}
	if st.Size() < offset {
		offset = 0 // the file was replaced
	}
	buf := make([]byte, st.Size()-offset)
	n, err := f.ReadAt(buf, offset)
	if err != nil && n < len(buf) {
		return nil, offset, err
	}
	var out []Refusal
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		var r Refusal
		if json.Unmarshal(buf[:i], &r) == nil {
			out = append(out, r)
		}
		buf = buf[i+1:]
		offset += int64(i + 1)
	}
	return out, offset, nil
}

// RegisterClient records the address node reaches the storage from.
func (s *Store) RegisterClient(node, addr string) error {
	if err := checkID(node); err != nil {
		return err
	}
	if _, err := netip.ParseAddr(addr); err != nil {
		return fmt.Errorf("node %s: address %q: %w", node, addr, err)
	}
	dir := filepath.Join(s.root, "clients")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, node), []byte(addr), 0o644)
}

// Clients maps each registered node to its address.
func (s *Store) Clients() (map[string]string, error) {
	dir := filepath.Join(s.root, "clients")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			out[e.Name()] = string(b)
		}
	}
	return out, nil
}

// FenceWatch answers "is this client fenced?" for the data path, re-reading the table only
// when the file changed (inode, size or modification time), so each operation costs one stat.
type FenceWatch struct {
	store  *Store
	addr   netip.Addr
	mu     sync.Mutex
	seen   [3]int64
	fenced bool
}

func NewFenceWatch(store *Store, addr string) (*FenceWatch, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("client address %q: %w", addr, err)
	}
	return &FenceWatch{store: store, addr: a, seen: [3]int64{-1, -1, -1}}, nil
}

// Fenced: the table names a block holding this client's address. A table that cannot be read
// counts as fenced: the storage fails closed.
func (w *FenceWatch) Fenced() bool {
	var st syscall.Stat_t
	err := syscall.Stat(w.store.fencePath(), &st)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == syscall.ENOENT {
		w.seen, w.fenced = [3]int64{0, 0, 0}, false
		return false
	}
	if err != nil {
		return true
	}
	key := [3]int64{int64(st.Ino), st.Size, st.Mtim.Nano()}
	if key == w.seen {
		return w.fenced
	}
	blocks, err := w.store.Fences()
	if err != nil {
		return true
	}
	w.fenced = false
	for _, b := range blocks {
		if p, err := netip.ParsePrefix(b); err == nil && p.Contains(w.addr) {
			w.fenced = true
		}
	}
	w.seen = key
	return w.fenced
}
