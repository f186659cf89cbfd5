package main

import (
	"context"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"nodedown.dev/testenv/csi/csiaddons/fence"
	addons "nodedown.dev/testenv/csi/csiaddons/identity"
)

// The csi-addons services of the controller, on a socket of their own (--csiaddons-endpoint):
// the identity a csi-addons controller asks first, and the network fence. Fencing edits the
// storage's fence table (fencetable.go); volumes whose data path is "fuse" (fuse.go) then refuse
// every operation of a fenced client, on files already open too.

type addonsIdentity struct {
	addons.UnimplementedIdentityServer
}

func (addonsIdentity) GetIdentity(context.Context, *addons.GetIdentityRequest) (*addons.GetIdentityResponse, error) {
	return &addons.GetIdentityResponse{Name: DriverName, VendorVersion: Version}, nil
}

func (addonsIdentity) GetCapabilities(context.Context, *addons.GetCapabilitiesRequest) (*addons.GetCapabilitiesResponse, error) {
	fenceCap := func(t addons.Capability_NetworkFence_Type) *addons.Capability {
		return &addons.Capability{Type: &addons.Capability_NetworkFence_{
			NetworkFence: &addons.Capability_NetworkFence{Type: t},
		}}
	}
	return &addons.GetCapabilitiesResponse{Capabilities: []*addons.Capability{
		{Type: &addons.Capability_Service_{Service: &addons.Capability_Service{
			Type: addons.Capability_Service_CONTROLLER_SERVICE,
		}}},
		fenceCap(addons.Capability_NetworkFence_NETWORK_FENCE),
		fenceCap(addons.Capability_NetworkFence_GET_CLIENTS_TO_FENCE),
	}}, nil
}

func (addonsIdentity) Probe(context.Context, *addons.ProbeRequest) (*addons.ProbeResponse, error) {
	return &addons.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

type fenceServer struct {
	fence.UnimplementedFenceControllerServer
	store *Store
}

func cidrStrings(cidrs []*fence.CIDR) ([]string, error) {
	if len(cidrs) == 0 {
		return nil, status.Error(codes.InvalidArgument, "cidrs is required")
	}
	out := make([]string, 0, len(cidrs))
	for _, c := range cidrs {
		out = append(out, c.GetCidr())
	}
	if _, err := ParseCIDRs(out); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return out, nil
}

func (f *fenceServer) FenceClusterNetwork(_ context.Context, req *fence.FenceClusterNetworkRequest) (*fence.FenceClusterNetworkResponse, error) {
	blocks, err := cidrStrings(req.GetCidrs())
	if err != nil {
		return nil, err
	}
	if err := f.store.SetFence(blocks, true); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &fence.FenceClusterNetworkResponse{}, nil
}

func (f *fenceServer) UnfenceClusterNetwork(_ context.Context, req *fence.UnfenceClusterNetworkRequest) (*fence.UnfenceClusterNetworkResponse, error) {
	blocks, err := cidrStrings(req.GetCidrs())
	if err != nil {
		return nil, err
	}
	if err := f.store.SetFence(blocks, false); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &fence.UnfenceClusterNetworkResponse{}, nil
}

func (f *fenceServer) ListClusterFence(context.Context, *fence.ListClusterFenceRequest) (*fence.ListClusterFenceResponse, error) {
	blocks, err := f.store.Fences()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp := &fence.ListClusterFenceResponse{}
	for _, b := range blocks {
		resp.Cidrs = append(resp.Cidrs, &fence.CIDR{Cidr: b})
	}
	return resp, nil
}

// GetFenceClients: each node plugin is one client of the storage, at its node's address.
func (f *fenceServer) GetFenceClients(context.Context, *fence.GetFenceClientsRequest) (*fence.GetFenceClientsResponse, error) {
	clients, err := f.store.Clients()
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	nodes := make([]string, 0, len(clients))
	for n := range clients {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	resp := &fence.GetFenceClientsResponse{}
	for _, n := range nodes {
		blocks, err := ParseCIDRs([]string{clients[n]})
		if err != nil {
			continue
		}
		resp.Clients = append(resp.Clients, &fence.ClientDetails{Id: n, Addresses: []*fence.CIDR{{Cidr: blocks[0]}}})
	}
	return resp, nil
}
