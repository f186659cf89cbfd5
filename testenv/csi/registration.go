package main

import (
	"context"
	"log"
	"path/filepath"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrar answers the kubelet's plugin watcher: it finds our socket in the registration
// directory, asks GetInfo, then calls the CSI endpoint (NodeGetInfo) and reports back.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	endpoint string
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              DriverName,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		log.Printf("registered with the kubelet")
	} else {
		log.Printf("the kubelet refused the registration: %s", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}

// serveRegistration listens on <dir>/<driver>-reg.sock for the kubelet.
func serveRegistration(dir, csiSocket string) (*grpc.Server, error) {
	lis, err := listen(filepath.Join(dir, DriverName+"-reg.sock"))
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	registerapi.RegisterRegistrationServer(srv, &registrar{endpoint: csiSocket})
	go func() {
		if err := srv.Serve(lis); err != nil {
			log.Printf("registration socket: %v", err)
		}
	}()
	return srv, nil
}
