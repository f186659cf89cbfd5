package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The zone comes from the kubelet's flags as kind writes them (copied from a testenv node).
func TestZoneFromKubeletFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "kubeadm-flags.env")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	zone, err := zoneFromKubeletFlags(write(`KUBELET_KUBEADM_ARGS="--pod-infra-container-image=registry.k8s.io/pause:3.10.1 --node-ip=172.18.0.8 --node-labels=topology.kubernetes.io/zone=zone-b --provider-id=kind://docker/nodedown/nodedown-worker3"` + "\n"))
	if err != nil || zone != "zone-b" {
		t.Fatalf("zone %q, %v; want zone-b", zone, err)
	}
	zone, err = zoneFromKubeletFlags(write(`KUBELET_KUBEADM_ARGS="--node-labels=a=b,topology.kubernetes.io/zone=z1,c=d"`))
	if err != nil || zone != "z1" {
		t.Fatalf("zone %q, %v; want z1", zone, err)
	}
	zone, err = zoneFromKubeletFlags(write(`KUBELET_KUBEADM_ARGS="--node-ip=172.18.0.2"`))
	if err != nil || zone != "" {
		t.Fatalf("zone %q, %v; want none", zone, err)
	}
	if _, err := zoneFromKubeletFlags(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing file is an error")
	}
}

// A volume made with a topology requirement is zonal: in the preferred zone, attachable to
// that zone's nodes only; one made without stays reachable from every node.
func TestZonalVolumesAttachInTheirZoneOnly(t *testing.T) {
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for id, zone := range map[string]string{"a1": "zone-a", "a2": "zone-a", "b1": "zone-b"} {
		if err := store.RegisterNode(id, zone); err != nil {
			t.Fatal(err)
		}
		n := &node{store: store, id: id, zone: zone}
		info, _ := n.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
		if info.GetAccessibleTopology().GetSegments()[TopologyKey] != zone {
			t.Fatalf("%s: NodeGetInfo topology %v", id, info.GetAccessibleTopology())
		}
	}
	c := &controller{store: store}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	zoneOf := func(z string) *csi.Topology { return &csi.Topology{Segments: map[string]string{TopologyKey: z}} }
	made, err := c.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name:               "zonal",
		VolumeCapabilities: []*csi.VolumeCapability{capability},
		AccessibilityRequirements: &csi.TopologyRequirement{
			Requisite: []*csi.Topology{zoneOf("zone-b"), zoneOf("zone-a")},
			Preferred: []*csi.Topology{zoneOf("zone-a"), zoneOf("zone-b")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := made.GetVolume().GetAccessibleTopology(); len(got) != 1 || got[0].GetSegments()[TopologyKey] != "zone-a" {
		t.Fatalf("accessible topology %v; want the first preferred zone, zone-a", got)
	}
	publish := func(id, node string) error {
		_, err := c.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
			VolumeId: id, NodeId: node, VolumeCapability: capability,
		})
		return err
	}
	if err := publish("zonal", "b1"); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("attaching a zone-a volume to a zone-b node: %v; want FailedPrecondition", err)
	}
	if err := publish("zonal", "a2"); err != nil {
		t.Fatalf("attaching in its zone: %v", err)
	}
	if _, err := c.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "regional", VolumeCapabilities: []*csi.VolumeCapability{capability},
	}); err != nil {
		t.Fatal(err)
	}
	if err := publish("regional", "b1"); err != nil {
		t.Fatalf("a volume made without topology attaches anywhere: %v", err)
	}
	// A class that says every zone: no topology, even with a requirement.
	anyZone, err := c.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "any-zone", VolumeCapabilities: []*csi.VolumeCapability{capability},
		Parameters:                map[string]string{ZonesParameter: "any"},
		AccessibilityRequirements: &csi.TopologyRequirement{Preferred: []*csi.Topology{zoneOf("zone-a")}},
	})
	if err != nil || len(anyZone.GetVolume().GetAccessibleTopology()) != 0 {
		t.Fatalf("zones any: %v, topology %v", err, anyZone.GetVolume().GetAccessibleTopology())
	}
	if err := publish("any-zone", "b1"); err != nil {
		t.Fatalf("a volume of every zone attaches anywhere: %v", err)
	}
	if _, err := c.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: "bad", VolumeCapabilities: []*csi.VolumeCapability{capability},
		Parameters: map[string]string{ZonesParameter: "some"},
	}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("zones some: %v; want InvalidArgument", err)
	}
}
