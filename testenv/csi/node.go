package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type node struct {
	csi.UnimplementedNodeServer
	store *Store
	id    string
	// zone: the node's topology.kubernetes.io/zone ("" for none), its accessible topology.
	zone string
	// maxVolumes: the attach limit published in NodeGetInfo (0: none).
	maxVolumes int64
	mu         sync.Mutex
	// published: volume ID -> target paths this plugin published it at (kept to enforce
	// SINGLE_NODE_SINGLE_WRITER, i.e. ReadWriteOncePod, across targets; checked against
	// mountinfo, so a target unmounted behind our back does not count).
	published map[string]map[string]bool
	// fence: this node's client of the storage's fence table (nil without --node-address);
	// served: staging path -> the FUSE server of a volume on the fenced data path.
	fence  *FenceWatch
	served map[string]*fuse.Server
}

func nodeCap(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
	return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
		Rpc: &csi.NodeServiceCapability_RPC{Type: t},
	}}
}

func (n *node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	info := &csi.NodeGetInfoResponse{NodeId: n.id, MaxVolumesPerNode: n.maxVolumes}
	if n.zone != "" {
		info.AccessibleTopology = &csi.Topology{Segments: map[string]string{TopologyKey: n.zone}}
	}
	return info, nil
}

func (n *node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		nodeCap(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		nodeCap(csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER),
	}}, nil
}

// NodeStageVolume mounts the volume at the node's staging path — only if it is attached to
// this node, as a block device would only be there after the attach.
func (n *node) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, staging := req.GetVolumeId(), req.GetStagingTargetPath()
	if err := n.checkRequest(id, staging, "staging target path", req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if !n.store.AttachedTo(id, n.id) {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s", id, n.id)
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		if path := req.GetVolumeContext()[DataPathAttribute]; path == "fuse" {
			return nil, status.Errorf(codes.InvalidArgument, "volume context %s: the fenced data path serves filesystems, not raw block volumes", DataPathAttribute)
		}
		if err := n.stageBlock(id, staging); err != nil {
			return nil, status.Errorf(codes.Internal, "staging block volume %s: %v", id, err)
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	switch path := req.GetVolumeContext()[DataPathAttribute]; path {
	case "", "bind":
		if err := bindMount(n.store.VolumeDir(id), staging, false); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	case "fuse":
		if err := n.stageFenced(id, staging); err != nil {
			return nil, err
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "volume context %s: %q is not a data path (bind or fuse)", DataPathAttribute, path)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (n *node) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "staging target path is required")
	}
	n.mu.Lock()
	srv := n.served[req.GetStagingTargetPath()]
	delete(n.served, req.GetStagingTargetPath())
	n.mu.Unlock()
	if err := detachLoop(filepath.Join(req.GetStagingTargetPath(), loopDevNode)); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if srv != nil {
		if err := srv.Unmount(); err != nil {
			log.Printf("unmounting the FUSE server at %s: %v (unmounting the path)", req.GetStagingTargetPath(), err)
		}
	}
	if err := unmount(req.GetStagingTargetPath(), false); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// stageFenced serves volume id at staging through the fenced data path (fuse.go). Idempotent.
func (n *node) stageFenced(id, staging string) error {
	if n.fence == nil {
		return status.Errorf(codes.FailedPrecondition, "the fenced data path needs the node plugin's --node-address (NODE_IP)")
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.served[staging] != nil {
		return nil
	}
	if mounted, err := isMountPoint(staging); err != nil || mounted {
		// Mounted by a previous plugin process whose server is gone: the mount is dead. Replace it.
		_ = syscall.Unmount(staging, syscall.MNT_DETACH)
	}
	srv, err := mountFenced(n.store.VolumeDir(id), staging, id, n.id, n.fence)
	if err != nil {
		return status.Errorf(codes.Internal, "serving volume %s at %s: %v", id, staging, err)
	}
	if n.served == nil {
		n.served = map[string]*fuse.Server{}
	}
	n.served[staging] = srv
	return nil
}

func (n *node) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, target, staging := req.GetVolumeId(), req.GetTargetPath(), req.GetStagingTargetPath()
	if err := n.checkRequest(id, target, "target path", req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	if staging == "" {
		return nil, status.Error(codes.InvalidArgument, "staging target path is required (the plugin stages volumes)")
	}
	block := req.GetVolumeCapability().GetBlock() != nil
	if !block {
		mounted, err := isMountPoint(staging)
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if !mounted {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", id, staging)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.published == nil {
		n.published = map[string]map[string]bool{}
	}
	if req.GetVolumeCapability().GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		for other := range n.published[id] {
			if other == target {
				continue
			}
			if still, _ := isMountPoint(other); still {
				return nil, status.Errorf(codes.FailedPrecondition,
					"volume %s (single writer) is already published at %s", id, other)
			}
			delete(n.published[id], other)
		}
	}
	publish := bindMount
	if block {
		publish = publishBlock
	}
	if err := publish(staging, target, req.GetReadonly()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if n.published[id] == nil {
		n.published[id] = map[string]bool{}
	}
	n.published[id][target] = true
	return &csi.NodePublishVolumeResponse{}, nil
}

func (n *node) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if req.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "target path is required")
	}
	if err := unmount(req.GetTargetPath(), true); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	n.mu.Lock()
	delete(n.published[req.GetVolumeId()], req.GetTargetPath())
	n.mu.Unlock()
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// checkRequest: the arguments every stage and publish call needs, and the volume exists.
func (n *node) checkRequest(id, path, pathName string, capability *csi.VolumeCapability) error {
	if id == "" {
		return status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if path == "" {
		return status.Errorf(codes.InvalidArgument, "%s is required", pathName)
	}
	if capability == nil {
		return status.Error(codes.InvalidArgument, "volume capability is required")
	}
	if err := checkCaps([]*csi.VolumeCapability{capability}); err != nil {
		return err
	}
	if !n.store.VolumeExists(id) {
		return status.Errorf(codes.NotFound, "volume %s does not exist", id)
	}
	return nil
}

// bindMount mounts source at target (a directory it makes), read-only if asked. Idempotent.
func bindMount(source, target string, readonly bool) error {
	if err := os.MkdirAll(target, 0o750); err != nil {
		return fmt.Errorf("making %s: %w", target, err)
	}
	mounted, err := isMountPoint(target)
	if err != nil || mounted {
		return err
	}
	if err := syscall.Mount(source, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s at %s: %w", source, target, err)
	}
	if readonly {
		if err := syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			_ = syscall.Unmount(target, 0)
			return fmt.Errorf("read-only remount of %s: %w", target, err)
		}
	}
	return nil
}

// unmount undoes bindMount; a path that is not mounted (or not there) is fine. With remove,
// the directory goes too (the plugin made it).
func unmount(target string, remove bool) error {
	mounted, err := isMountPoint(target)
	if err != nil {
		return err
	}
	if mounted {
		if err := syscall.Unmount(target, 0); err != nil {
			return fmt.Errorf("unmounting %s: %w", target, err)
		}
	}
	if remove {
		if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing %s: %w", target, err)
		}
	}
	return nil
}

// isMountPoint: path is a mount point in this mount namespace (/proc/self/mountinfo).
func isMountPoint(path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	} else if os.IsNotExist(err) {
		return false, nil
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMountPath(fields[4]) == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
