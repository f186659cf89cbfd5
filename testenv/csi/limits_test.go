package main

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An attach limit is published by the node plugin and enforced by the controller: a node at
// its limit takes no new volume (RESOURCE_EXHAUSTED) until one is detached; a volume already
// attached there is still idempotent; another node is not affected.
func TestTheAttachLimitIsPublishedAndEnforced(t *testing.T) {
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"w1", "w2"} {
		if err := store.RegisterNode(id, ""); err != nil {
			t.Fatal(err)
		}
	}
	n := &node{store: store, id: "w1", maxVolumes: 2}
	info, err := n.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if err != nil || info.GetMaxVolumesPerNode() != 2 {
		t.Fatalf("NodeGetInfo: %v, max volumes %d; want 2", err, info.GetMaxVolumesPerNode())
	}
	c := &controller{store: store, maxVolumes: 2}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	for _, v := range []string{"v1", "v2", "v3"} {
		if _, err := c.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: v, VolumeCapabilities: []*csi.VolumeCapability{capability}}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(id, node string) error {
		_, err := c.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
			VolumeId: id, NodeId: node, VolumeCapability: capability,
		})
		return err
	}
	for _, v := range []string{"v1", "v2"} {
		if err := publish(v, "w1"); err != nil {
			t.Fatalf("%s onto w1 under its limit: %v", v, err)
		}
	}
	if err := publish("v3", "w1"); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a third volume onto w1 (limit 2): %v; want ResourceExhausted", err)
	}
	if err := publish("v2", "w1"); err != nil {
		t.Fatalf("publishing an attached volume again at the limit: %v; want idempotent success", err)
	}
	if err := publish("v3", "w2"); err != nil {
		t.Fatalf("another node is not at its limit: %v", err)
	}
	if _, err := c.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: "v1", NodeId: "w1"}); err != nil {
		t.Fatal(err)
	}
	if err := publish("v3", "w1"); status.Code(err) != codes.FailedPrecondition {
		// v3 is on w2 now (single-node): the limit is not what refuses it.
		t.Fatalf("v3 attached to w2 onto w1: %v; want FailedPrecondition", err)
	}
	if _, err := c.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: "v3", NodeId: "w2"}); err != nil {
		t.Fatal(err)
	}
	if err := publish("v3", "w1"); err != nil {
		t.Fatalf("w1 below its limit after a detach: %v", err)
	}
}
