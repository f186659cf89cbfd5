package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// Store is the "storage array": a directory shared by every node.
//
//	volumes/<id>/            the volume's data
//	meta/<id>.json           its capacity (volumes made by CreateVolume)
//	attachments/<id>/<node>  the volume is attached to <node> (JSON: access mode, readonly)
//	nodes/<node>             a node plugin has registered this node (its "initiator")
//	lock                     flock'd around attachment changes
type Store struct{ root string }

// Attachment is one volume attached to one node.
type Attachment struct {
	Node     string `json:"node"`
	Mode     string `json:"mode"`
	Multi    bool   `json:"multiNode"`
	Readonly bool   `json:"readonly"`
}

var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// ErrBadID: a volume or node ID this storage cannot name.
var ErrBadID = errors.New("IDs are 1-200 characters of [A-Za-z0-9._-], starting with a letter or digit")

func OpenStore(root string) (*Store, error) {
	for _, d := range []string{"volumes", "meta", "attachments", "nodes"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("storage root %s: %w", root, err)
		}
	}
	return &Store{root: root}, nil
}

func checkID(id string) error {
	if !validID.MatchString(id) {
		return fmt.Errorf("%q: %w", id, ErrBadID)
	}
	return nil
}

func (s *Store) VolumeDir(id string) string { return filepath.Join(s.root, "volumes", id) }

func (s *Store) VolumeExists(id string) bool {
	if checkID(id) != nil {
		return false
	}
	st, err := os.Stat(s.VolumeDir(id))
	return err == nil && st.IsDir()
}

type meta struct {
	CapacityBytes int64 `json:"capacityBytes"`
	// Zone: the topology the volume is accessible from (a zonal disk), "" for every zone.
	Zone string `json:"zone,omitempty"`
}

// CreateVolume makes volume id with the given capacity; created=false when it existed with the
// same capacity; an error wrapping os.ErrExist when it existed with another.
func (s *Store) CreateVolume(id string, capacity int64) (bool, error) {
	return s.CreateZonalVolume(id, capacity, "")
}

// CreateZonalVolume is CreateVolume for a volume accessible from zone only ("" for every zone).
func (s *Store) CreateZonalVolume(id string, capacity int64, zone string) (bool, error) {
	if err := checkID(id); err != nil {
		return false, err
	}
	unlock, err := s.lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	metaPath := filepath.Join(s.root, "meta", id+".json")
	if s.VolumeExists(id) {
		var m meta
		if b, err := os.ReadFile(metaPath); err == nil && json.Unmarshal(b, &m) == nil && m.CapacityBytes != capacity {
			return false, fmt.Errorf("volume %s exists with capacity %d, not %d: %w", id, m.CapacityBytes, capacity, os.ErrExist)
		}
		return false, nil
	}
	if err := os.MkdirAll(s.VolumeDir(id), 0o777); err != nil {
		return false, err
	}
	b, _ := json.Marshal(meta{CapacityBytes: capacity, Zone: zone})
	return true, os.WriteFile(metaPath, b, 0o644)
}

// Capacity is the volume's capacity as CreateVolume recorded it, else defaultCapacity (a
// pre-provisioned volume has no record).
func (s *Store) Capacity(id string) int64 {
	var m meta
	if b, err := os.ReadFile(filepath.Join(s.root, "meta", id+".json")); err == nil && json.Unmarshal(b, &m) == nil && m.CapacityBytes > 0 {
		return m.CapacityBytes
	}
	return defaultCapacity
}

// EnsureVolume makes a pre-provisioned (static) volume's directory if it is not there yet.
func (s *Store) EnsureVolume(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return os.MkdirAll(s.VolumeDir(id), 0o777)
}

func (s *Store) DeleteVolume(id string) error {
	if checkID(id) != nil {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if att, _ := s.attachments(id); len(att) > 0 {
		return fmt.Errorf("volume %s is attached to node %s: %w", id, att[0].Node, os.ErrPermission)
	}
	_ = os.Remove(filepath.Join(s.root, "meta", id+".json"))
	_ = os.RemoveAll(filepath.Join(s.root, "attachments", id))
	return os.RemoveAll(s.VolumeDir(id))
}

// RegisterNode records that a node plugin serves node, in zone (its topology; "" for none).
func (s *Store) RegisterNode(node, zone string) error {
	if err := checkID(node); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.root, "nodes", node), []byte(zone), 0o644)
}

// NodeZone is the zone node registered with ("" when none or unknown).
func (s *Store) NodeZone(node string) string {
	if checkID(node) != nil {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(s.root, "nodes", node))
	return strings.TrimSpace(string(b))
}

// VolumeZone is the zone CreateVolume placed volume id in ("" for a volume reachable from
// every zone: made without a topology requirement, or pre-provisioned).
func (s *Store) VolumeZone(id string) string {
	var m meta
	if b, err := os.ReadFile(filepath.Join(s.root, "meta", id+".json")); err == nil && json.Unmarshal(b, &m) == nil {
		return m.Zone
	}
	return ""
}

func (s *Store) NodeKnown(node string) bool {
	if checkID(node) != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(s.root, "nodes", node))
	return err == nil
}

// Attachments lists the nodes volume id is attached to, by node name.
func (s *Store) Attachments(id string) ([]Attachment, error) {
	if checkID(id) != nil {
		return nil, nil
	}
	return s.attachments(id)
}

func (s *Store) attachments(id string) ([]Attachment, error) {
	dir := filepath.Join(s.root, "attachments", id)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Attachment
	for _, e := range entries {
		var a Attachment
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || json.Unmarshal(b, &a) != nil {
			a = Attachment{Mode: "unknown"}
		}
		a.Node = e.Name()
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// ErrAttachedElsewhere: the single-node rule refused a second node.
var ErrAttachedElsewhere = errors.New("attached elsewhere")

// Attach records volume id attached to a.Node. Idempotent for the same node and flags; a
// single-node volume attached to another node is refused with ErrAttachedElsewhere; the same
// node with other flags with os.ErrExist.
func (s *Store) Attach(id string, a Attachment) error { return s.AttachWithin(id, a, 0) }

// ErrAttachLimit: the node has as many volumes attached as the limit allows.
var ErrAttachLimit = errors.New("attach limit reached")

// AttachWithin is Attach with an attach limit: a volume new to a.Node is refused with
// ErrAttachLimit when the node already has limit volumes attached (0: no limit). Counted under
// the store's lock, so two attaches cannot both take the last place.
func (s *Store) AttachWithin(id string, a Attachment, limit int64) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	current, err := s.attachments(id)
	if err != nil {
		return err
	}
	for _, c := range current {
		if c.Node == a.Node {
			if c.Readonly != a.Readonly || c.Mode != a.Mode {
				return fmt.Errorf("volume %s is attached to node %s as %s readonly=%v, not %s readonly=%v: %w",
					id, c.Node, c.Mode, c.Readonly, a.Mode, a.Readonly, os.ErrExist)
			}
			return nil
		}
		if !c.Multi || !a.Multi {
			return fmt.Errorf("volume %s is attached to node %s (%s); a single-node volume attaches to one node at a time: %w",
				id, c.Node, c.Mode, ErrAttachedElsewhere)
		}
	}
	if limit > 0 {
		n, err := s.attachedCount(a.Node)
		if err != nil {
			return err
		}
		if n >= limit {
			return fmt.Errorf("node %s has %d volumes attached, its limit: %w", a.Node, n, ErrAttachLimit)
		}
	}
	dir := filepath.Join(s.root, "attachments", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(a)
	tmp := filepath.Join(dir, "."+a.Node+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, a.Node))
}

// attachedCount is how many volumes are attached to node (the caller holds the lock).
func (s *Store) attachedCount(node string) (int64, error) {
	vols, err := os.ReadDir(filepath.Join(s.root, "attachments"))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, v := range vols {
		if _, err := os.Stat(filepath.Join(s.root, "attachments", v.Name(), node)); err == nil {
			n++
		}
	}
	return n, nil
}

// Detach removes the record of volume id on node (every node when node is empty).
func (s *Store) Detach(id, node string) error {
	if checkID(id) != nil {
		return nil
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	dir := filepath.Join(s.root, "attachments", id)
	if node == "" {
		return os.RemoveAll(dir)
	}
	if err := os.Remove(filepath.Join(dir, node)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// AttachedTo says whether volume id is attached to node.
func (s *Store) AttachedTo(id, node string) bool {
	att, _ := s.Attachments(id)
	for _, a := range att {
		if a.Node == node {
			return true
		}
	}
	return false
}

// lock takes an exclusive flock on the store (the controller and csi-sanity may race).
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.root, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
