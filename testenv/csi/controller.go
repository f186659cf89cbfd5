package main

import (
	"context"
	"errors"
	"os"
	"regexp"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ProvisionAttribute in a static PersistentVolume's `csi.volumeAttributes`: with the value
// "on-publish", the volume's directory is made on its first ControllerPublish (the storage of
// a pre-provisioned volume; there is no external-provisioner here).
const ProvisionAttribute = "nodedown.dev/provision"

const defaultCapacity = 1 << 30

type controller struct {
	csi.UnimplementedControllerServer
	store *Store
	// maxVolumes: the attach limit per node (0: none), the one the node plugins publish.
	maxVolumes int64
}

func controllerCap(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
	return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
		Rpc: &csi.ControllerServiceCapability_RPC{Type: t},
	}}
}

func (c *controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		controllerCap(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		controllerCap(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME),
		controllerCap(csi.ControllerServiceCapability_RPC_PUBLISH_READONLY),
		controllerCap(csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER),
	}}, nil
}

// checkCaps: every capability must be a filesystem mount or a raw block volume, with a known
// access mode.
func checkCaps(caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	for _, c := range caps {
		if c.GetMount() == nil && c.GetBlock() == nil {
			return status.Error(codes.InvalidArgument, "a volume capability needs an access type (mount or block)")
		}
		if c.GetAccessMode() == nil || c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN {
			return status.Error(codes.InvalidArgument, "a volume capability needs an access mode")
		}
	}
	return nil
}

// multiNode: the access mode lets the volume attach to several nodes at once (RWX, ROX).
func multiNode(m csi.VolumeCapability_AccessMode_Mode) bool {
	switch m {
	case csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		return true
	}
	return false
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func (c *controller) CreateVolume(_ context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is required")
	}
	if err := checkCaps(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Error(codes.InvalidArgument, "volume content sources (snapshots, clones) are not supported")
	}
	capacity := req.GetCapacityRange().GetRequiredBytes()
	limit := req.GetCapacityRange().GetLimitBytes()
	if limit != 0 && capacity > limit {
		return nil, status.Errorf(codes.InvalidArgument, "required bytes %d exceed limit bytes %d", capacity, limit)
	}
	if capacity == 0 {
		capacity = defaultCapacity
		if limit != 0 && limit < capacity {
			capacity = limit
		}
	}
	vol := &csi.Volume{CapacityBytes: capacity}
	switch path := req.GetParameters()[DataPathAttribute]; path {
	case "", "bind":
	case "fuse":
		vol.VolumeContext = map[string]string{DataPathAttribute: path}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "parameter %s: %q is not a data path (bind or fuse)", DataPathAttribute, path)
	}
	id := unsafeChars.ReplaceAllString(req.GetName(), "-")
	if len(id) > 200 {
		id = id[:200]
	}
	// A topology requirement makes a zonal volume, in the first preferred zone (the zone of
	// the node the scheduler picked, under WaitForFirstConsumer), else the first requisite one;
	// unless the class says `nodedown.dev/zones: any`.
	zone := ""
	switch z := req.GetParameters()[ZonesParameter]; z {
	case "", "one", "any":
	default:
		return nil, status.Errorf(codes.InvalidArgument, "parameter %s: %q is neither `one` (a zonal volume, the default) nor `any` (a volume every zone reaches)", ZonesParameter, z)
	}
	if req.GetAccessibilityRequirements() != nil && req.GetParameters()[ZonesParameter] != "any" {
		for _, t := range append(req.GetAccessibilityRequirements().GetPreferred(), req.GetAccessibilityRequirements().GetRequisite()...) {
			if z := t.GetSegments()[TopologyKey]; z != "" {
				zone = z
				break
			}
		}
	}
	if zone != "" {
		vol.AccessibleTopology = []*csi.Topology{{Segments: map[string]string{TopologyKey: zone}}}
	}
	if _, err := c.store.CreateZonalVolume(id, capacity, zone); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, status.Error(codes.AlreadyExists, err.Error())
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	vol.VolumeId = id
	return &csi.CreateVolumeResponse{Volume: vol}, nil
}

func (c *controller) DeleteVolume(_ context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if err := c.store.DeleteVolume(req.GetVolumeId()); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (c *controller) ValidateVolumeCapabilities(_ context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	if !c.store.VolumeExists(req.GetVolumeId()) {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", req.GetVolumeId())
	}
	if err := checkCaps(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// ControllerPublishVolume attaches the volume to the node: the rule of cloud block storage.
func (c *controller) ControllerPublishVolume(_ context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	id, nodeID := req.GetVolumeId(), req.GetNodeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if nodeID == "" {
		return nil, status.Error(codes.InvalidArgument, "node ID is required")
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume capability is required")
	}
	if err := checkCaps([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	if !c.store.VolumeExists(id) && req.GetVolumeContext()[ProvisionAttribute] == "on-publish" {
		if err := c.store.EnsureVolume(id); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "volume %s: %v", id, err)
		}
	}
	if !c.store.VolumeExists(id) {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", id)
	}
	if !c.store.NodeKnown(nodeID) {
		return nil, status.Errorf(codes.NotFound, "node %s is not known to this storage (no node plugin registered it)", nodeID)
	}
	if zone := c.store.VolumeZone(id); zone != "" && c.store.NodeZone(nodeID) != zone {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is in zone %s and node %s is not (zone %q): a zonal volume attaches to its zone's nodes only", id, zone, nodeID, c.store.NodeZone(nodeID))
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	err := c.store.AttachWithin(id, Attachment{Node: nodeID, Mode: mode.String(), Multi: multiNode(mode), Readonly: req.GetReadonly()}, c.maxVolumes)
	switch {
	case err == nil:
		return &csi.ControllerPublishVolumeResponse{PublishContext: map[string]string{"attachedTo": nodeID}}, nil
	case errors.Is(err, ErrAttachLimit):
		// What the CSI spec names for a node that can take no more volumes.
		return nil, status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, ErrAttachedElsewhere):
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, os.ErrExist):
		return nil, status.Error(codes.AlreadyExists, err.Error())
	default:
		return nil, status.Error(codes.Internal, err.Error())
	}
}

// ControllerUnpublishVolume detaches it (from every node when no node ID is given).
func (c *controller) ControllerUnpublishVolume(_ context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if req.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID is required")
	}
	if err := c.store.Detach(req.GetVolumeId(), req.GetNodeId()); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}
