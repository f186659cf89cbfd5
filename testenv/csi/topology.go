package main

import (
	"fmt"
	"os"
	"strings"
)

// TopologyKey is the topology segment of a zonal volume and of a node: the well-known zone
// label, which testenv's kubelets set on their Nodes (--node-labels).
const TopologyKey = "topology.kubernetes.io/zone"

// ZonesParameter is the StorageClass parameter that says whether a provisioned volume is
// zonal (`one`, the default: reachable from the zone it was made in only, like a cloud disk)
// or reachable from every zone (`any`).
const ZonesParameter = "nodedown.dev/zones"

// zoneFromKubeletFlags reads the zone from the kubelet's kubeadm-flags.env
// (KUBELET_KUBEADM_ARGS="… --node-labels=a=b,topology.kubernetes.io/zone=zone-a …"); "" when
// the kubelet sets no zone label.
func zoneFromKubeletFlags(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the kubelet's flags %s: %w", path, err)
	}
	for _, field := range strings.Fields(strings.NewReplacer(`"`, " ", "'", " ").Replace(string(b))) {
		labels, ok := strings.CutPrefix(field, "--node-labels=")
		if !ok {
			continue
		}
		for _, label := range strings.Split(labels, ",") {
			if zone, ok := strings.CutPrefix(label, TopologyKey+"="); ok {
				return zone, nil
			}
		}
	}
	return "", nil
}
