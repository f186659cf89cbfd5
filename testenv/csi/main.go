// Command nodedown-csi is testenv's CSI driver: volumes live in the host directory every node
// mounts (so data follows the pod, like a network disk), but they *attach* like cloud block
// storage. ControllerPublishVolume records which node a volume is attached to and refuses a
// second node for a single-node access mode (FAILED_PRECONDITION), ControllerUnpublishVolume
// frees it, and NodeStageVolume refuses a node the volume is not attached to. Run with the
// real kubernetes-csi external-attacher, VolumeAttachments, finalizers, Multi-Attach errors and
// the 6-minute force detach go through the same code paths as any vendor's driver.
//
//	nodedown-csi controller --endpoint unix:///csi/csi.sock --root /mnt/nodedown-shared/csi
//	nodedown-csi node --endpoint unix:///var/lib/kubelet/plugins/csi.nodedown.dev/csi.sock \
//	    --root /mnt/nodedown-shared/csi --node-id $NODE_NAME \
//	    --registration-dir /var/lib/kubelet/plugins_registry
//	nodedown-csi all ...   (both on one endpoint: what csi-sanity talks to)
//
// The node plugin registers itself with the kubelet through the plugin registration socket
// (node-driver-registrar cannot be had here).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"nodedown.dev/testenv/csi/csiaddons/fence"
	addonsid "nodedown.dev/testenv/csi/csiaddons/identity"
)

// DefaultDriverName is the CSI driver's name (CSIDriver object, StorageClass provisioner, PV
// source) unless --driver-name says otherwise.
const DefaultDriverName = "csi.nodedown.dev"

// DriverName is the name this process serves: testenv runs a second instance under another
// name, with an attach limit, on a storage root of its own (nodedown-limits).
var DriverName = DefaultDriverName

// Version is the driver's vendor version.
const Version = "0.1.0"

func main() {
	modes := map[string]bool{"controller": true, "node": true, "all": true, "fence-controller": true}
	if len(os.Args) < 2 || !modes[os.Args[1]] {
		fmt.Fprintln(os.Stderr, "usage: nodedown-csi controller|node|all --endpoint unix://PATH --root DIR [--csiaddons-endpoint unix://PATH] [--node-id NAME] [--node-address IP] [--registration-dir DIR] [--driver-name NAME] [--max-volumes-per-node N]\n"+
			"       nodedown-csi fence-controller --csiaddons-endpoint unix://PATH")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	endpoint := fs.String("endpoint", "unix:///csi/csi.sock", "gRPC endpoint (unix://PATH)")
	root := fs.String("root", "/mnt/nodedown-shared/csi", "the storage: volumes, attachments and registered nodes live here")
	nodeID := fs.String("node-id", os.Getenv("NODE_NAME"), "this node's ID (node plugin)")
	regDir := fs.String("registration-dir", "", "kubelet plugin registration directory; empty: do not register")
	addonsEndpoint := fs.String("csiaddons-endpoint", "", "the csi-addons services (identity, network fence) on this gRPC endpoint (unix://PATH); empty: not served")
	nodeAddr := fs.String("node-address", os.Getenv("NODE_IP"), "the address this node reaches the storage from: its client in the fence table (node plugin)")
	zoneFlag := fs.String("zone", "", "this node's zone (topology.kubernetes.io/zone), its accessible topology (node plugin); empty: read --kubelet-flags")
	kubeletFlags := fs.String("kubelet-flags", "", "the kubelet's kubeadm-flags.env: the zone is read from its --node-labels (the Downward API cannot give a node's labels)")
	driverName := fs.String("driver-name", DefaultDriverName, "the driver's name (GetPluginInfo, the kubelet registration)")
	maxVolumes := fs.Int64("max-volumes-per-node", 0, "the attach limit: published in NodeGetInfo (the CSINode's allocatable count, which the scheduler honours) and enforced by ControllerPublishVolume (RESOURCE_EXHAUSTED); 0: none")
	_ = fs.Parse(os.Args[2:])
	DriverName = *driverName
	if *maxVolumes < 0 {
		log.Fatalf("nodedown-csi: --max-volumes-per-node %d: give 0 (no limit) or more", *maxVolumes)
	}

	store, err := OpenStore(*root)
	if err != nil {
		log.Fatalf("nodedown-csi: %v", err)
	}
	if mode == "fence-controller" {
		if err := runFenceController(*addonsEndpoint, store); err != nil {
			log.Fatalf("nodedown-csi: %v", err)
		}
		return
	}
	sock, err := socketPath(*endpoint)
	if err != nil {
		log.Fatalf("nodedown-csi: %v", err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, &identity{})
	if mode == "controller" || mode == "all" {
		csi.RegisterControllerServer(srv, &controller{store: store, maxVolumes: *maxVolumes})
	}
	if mode == "node" || mode == "all" {
		if *nodeID == "" {
			log.Fatal("nodedown-csi: --node-id (or NODE_NAME) is required for the node plugin")
		}
		zone := *zoneFlag
		if zone == "" && *kubeletFlags != "" {
			if zone, err = zoneFromKubeletFlags(*kubeletFlags); err != nil {
				log.Fatalf("nodedown-csi: %v", err)
			}
		}
		if err := store.RegisterNode(*nodeID, zone); err != nil {
			log.Fatalf("nodedown-csi: %v", err)
		}
		if zone != "" {
			log.Printf("nodedown-csi: node %s in zone %s", *nodeID, zone)
		}
		n := &node{store: store, id: *nodeID, zone: zone, maxVolumes: *maxVolumes}
		if *nodeAddr != "" {
			if err := store.RegisterClient(*nodeID, *nodeAddr); err != nil {
				log.Fatalf("nodedown-csi: %v", err)
			}
			if n.fence, err = NewFenceWatch(store, *nodeAddr); err != nil {
				log.Fatalf("nodedown-csi: %v", err)
			}
		}
		csi.RegisterNodeServer(srv, n)
	}
	lis, err := listen(sock)
	if err != nil {
		log.Fatalf("nodedown-csi: %v", err)
	}
	log.Printf("nodedown-csi %s %s: serving %s on %s (storage %s)", Version, mode, DriverName, sock, *root)
	var addons *grpc.Server
	if *addonsEndpoint != "" && mode != "node" {
		path, err := socketPath(*addonsEndpoint)
		if err != nil {
			log.Fatalf("nodedown-csi: %v", err)
		}
		alis, err := listen(path)
		if err != nil {
			log.Fatalf("nodedown-csi: %v", err)
		}
		addons = grpc.NewServer(grpc.UnaryInterceptor(logCalls))
		addonsid.RegisterIdentityServer(addons, addonsIdentity{})
		fence.RegisterFenceControllerServer(addons, &fenceServer{store: store})
		go func() {
			if err := addons.Serve(alis); err != nil {
				log.Printf("nodedown-csi: csi-addons: %v", err)
			}
		}()
		log.Printf("nodedown-csi: csi-addons identity and network fence on %s", path)
	}
	var reg *grpc.Server
	if *regDir != "" {
		reg, err = serveRegistration(*regDir, sock)
		if err != nil {
			log.Fatalf("nodedown-csi: %v", err)
		}
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		if reg != nil {
			reg.Stop()
		}
		if addons != nil {
			addons.Stop()
		}
		srv.Stop()
	}()
	if err := srv.Serve(lis); err != nil {
		log.Fatalf("nodedown-csi: %v", err)
	}
}

func socketPath(endpoint string) (string, error) {
	if p, ok := strings.CutPrefix(endpoint, "unix://"); ok && p != "" {
		return p, nil
	}
	return "", fmt.Errorf("endpoint %q: only unix://PATH is supported", endpoint)
}

// listen opens a unix socket at path, replacing a stale one left by an earlier process.
func listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	return net.Listen("unix", path)
}

func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s %v -> error: %v", info.FullMethod, req, err)
	} else if !strings.HasSuffix(info.FullMethod, "/Probe") && !strings.Contains(info.FullMethod, "GetCapabilities") {
		log.Printf("%s %v -> ok", info.FullMethod, req)
	}
	return resp, err
}
