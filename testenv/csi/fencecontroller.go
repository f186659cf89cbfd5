package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"nodedown.dev/testenv/csi/csiaddons/fence"
)

// The fence controller: testenv's stand-in for the csi-addons controller (which cannot be built
// here: its modules are not served). It reconciles NetworkFence objects
// (csiaddons.openshift.io/v1alpha1, the upstream CRDs) whose NetworkFenceClass names this driver
// to the driver's csi-addons FenceController over gRPC, the way the upstream controller does:
//
//   - a finalizer (csiaddons.openshift.io/network-fence) first, so a deleted fence is unfenced
//     before it goes;
//   - fenceState Fenced -> FenceClusterNetwork(cidrs, the class's parameters), Unfenced ->
//     UnfenceClusterNetwork; then status.result Succeeded or Failed with status.message;
//   - beyond upstream: each operation the storage refused a fenced client (its refusals.jsonl)
//     is reported as an Event (reason ClientRefused, namespace default) on the fence.
//
// It talks to the API server with the pod's service account over plain HTTP+JSON (list, then
// watch, relisting when the watch ends), so the driver needs no Kubernetes client library.

const (
	fenceGroupVersion = "/apis/csiaddons.openshift.io/v1alpha1"
	fenceFinalizer    = "csiaddons.openshift.io/network-fence"
)

type networkFence struct {
	Metadata struct {
		Name              string   `json:"name"`
		UID               string   `json:"uid"`
		ResourceVersion   string   `json:"resourceVersion"`
		DeletionTimestamp *string  `json:"deletionTimestamp"`
		Finalizers        []string `json:"finalizers"`
	} `json:"metadata"`
	Spec struct {
		NetworkFenceClassName string            `json:"networkFenceClassName"`
		Driver                string            `json:"driver"`
		FenceState            string            `json:"fenceState"`
		Cidrs                 []string          `json:"cidrs"`
		Parameters            map[string]string `json:"parameters"`
	} `json:"spec"`
	Status struct {
		Result  string `json:"result"`
		Message string `json:"message"`
	} `json:"status"`
}

type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func inClusterClient() (*apiClient, error) {
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, fmt.Errorf("not in a pod: KUBERNETES_SERVICE_HOST/PORT are not set")
	}
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &apiClient{
		base:  "https://" + net.JoinHostPort(host, port),
		token: string(bytes.TrimSpace(token)),
		http:  &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}, nil
}

func (c *apiClient) do(ctx context.Context, method, path, contentType string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

type fenceController struct {
	api   *apiClient
	fence fence.FenceControllerClient
	store *Store
	// fenced: the fences this controller put in place (name -> uid and blocks), for reporting
	// the storage's refusals on the fence that caused them.
	mu     sync.Mutex
	fenced map[string]fencedBy
}

type fencedBy struct {
	uid    string
	blocks []netip.Prefix
}

func runFenceController(addonsEndpoint string, store *Store) error {
	api, err := inClusterClient()
	if err != nil {
		return err
	}
	sock, err := socketPath(addonsEndpoint)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	c := &fenceController{api: api, fence: fence.NewFenceControllerClient(conn), store: store, fenced: map[string]fencedBy{}}
	log.Printf("fence controller: reconciling NetworkFences of class provisioner %s through %s", DriverName, sock)
	go c.reportRefusals(context.Background())
	for {
		if err := c.listAndWatch(context.Background()); err != nil {
			log.Printf("fence controller: %v (listing again in 1s)", err)
		}
		time.Sleep(time.Second)
	}
}

func (c *fenceController) listAndWatch(ctx context.Context) error {
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []networkFence `json:"items"`
	}
	if err := c.api.do(ctx, http.MethodGet, fenceGroupVersion+"/networkfences", "", nil, &list); err != nil {
		return err
	}
	for i := range list.Items {
		c.reconcile(ctx, &list.Items[i])
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.api.base+fenceGroupVersion+
		"/networkfences?watch=1&allowWatchBookmarks=false&timeoutSeconds=300&resourceVersion="+list.Metadata.ResourceVersion, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.api.token)
	resp, err := c.api.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Type   string       `json:"type"`
			Object networkFence `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("watch event: %w", err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			c.reconcile(ctx, &ev.Object)
		case "ERROR":
			return fmt.Errorf("watch: %s", sc.Text())
		}
	}
	return sc.Err()
}

// ours: the fence's class names this driver (or, deprecated upstream, its spec.driver does);
// the class's parameters, the fence's own overriding them.
func (c *fenceController) ours(ctx context.Context, nf *networkFence) (bool, map[string]string, error) {
	params := map[string]string{}
	if nf.Spec.NetworkFenceClassName != "" {
		var class struct {
			Spec struct {
				Provisioner string            `json:"provisioner"`
				Parameters  map[string]string `json:"parameters"`
			} `json:"spec"`
		}
		if err := c.api.do(ctx, http.MethodGet, fenceGroupVersion+"/networkfenceclasses/"+nf.Spec.NetworkFenceClassName, "", nil, &class); err != nil {
			return false, nil, err
		}
		if class.Spec.Provisioner != DriverName {
			return false, nil, nil
		}
		for k, v := range class.Spec.Parameters {
			params[k] = v
		}
	} else if nf.Spec.Driver != DriverName {
		return false, nil, nil
	}
	for k, v := range nf.Spec.Parameters {
		params[k] = v
	}
	return true, params, nil
}

func (c *fenceController) reconcile(ctx context.Context, nf *networkFence) {
	name := nf.Metadata.Name
	mine, params, err := c.ours(ctx, nf)
	if err != nil {
		c.setStatus(ctx, nf, "Failed", err.Error())
		return
	}
	if !mine {
		return
	}
	cidrs := make([]*fence.CIDR, 0, len(nf.Spec.Cidrs))
	for _, b := range nf.Spec.Cidrs {
		cidrs = append(cidrs, &fence.CIDR{Cidr: b})
	}
	path := fenceGroupVersion + "/networkfences/" + name
	if nf.Metadata.DeletionTimestamp != nil {
		c.remember(nf)
		if !slices.Contains(nf.Metadata.Finalizers, fenceFinalizer) {
			return
		}
		if _, err := c.fence.UnfenceClusterNetwork(ctx, &fence.UnfenceClusterNetworkRequest{Parameters: params, Cidrs: cidrs}); err != nil {
			log.Printf("fence controller: %s: unfencing before deletion: %v", name, err)
			return
		}
		log.Printf("fence controller: %s: unfenced %v (the fence is being deleted)", name, nf.Spec.Cidrs)
		rest := slices.DeleteFunc(slices.Clone(nf.Metadata.Finalizers), func(f string) bool { return f == fenceFinalizer })
		patch := map[string]any{"metadata": map[string]any{"finalizers": rest, "resourceVersion": nf.Metadata.ResourceVersion}}
		if err := c.api.do(ctx, http.MethodPatch, path, "application/merge-patch+json", patch, nil); err != nil {
			log.Printf("fence controller: %s: removing the finalizer: %v", name, err)
		}
		return
	}
	if !slices.Contains(nf.Metadata.Finalizers, fenceFinalizer) {
		patch := map[string]any{"metadata": map[string]any{
			"finalizers": append(slices.Clone(nf.Metadata.Finalizers), fenceFinalizer), "resourceVersion": nf.Metadata.ResourceVersion,
		}}
		if err := c.api.do(ctx, http.MethodPatch, path, "application/merge-patch+json", patch, nil); err != nil {
			log.Printf("fence controller: %s: adding the finalizer: %v", name, err)
			return // the patch's own event (or the relist) brings it back
		}
	}
	var rpcErr error
	msg := "fencing operation successful"
	switch nf.Spec.FenceState {
	case "Fenced":
		_, rpcErr = c.fence.FenceClusterNetwork(ctx, &fence.FenceClusterNetworkRequest{Parameters: params, Cidrs: cidrs})
	case "Unfenced":
		_, rpcErr = c.fence.UnfenceClusterNetwork(ctx, &fence.UnfenceClusterNetworkRequest{Parameters: params, Cidrs: cidrs})
		msg = "unfencing operation successful"
	default:
		rpcErr = fmt.Errorf("fenceState %q is neither Fenced nor Unfenced", nf.Spec.FenceState)
	}
	if rpcErr != nil {
		c.setStatus(ctx, nf, "Failed", rpcErr.Error())
		return
	}
	c.remember(nf)
	c.setStatus(ctx, nf, "Succeeded", msg)
}

// remember keeps (or, unfenced, forgets) a fence this controller put in place.
func (c *fenceController) remember(nf *networkFence) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if nf.Spec.FenceState != "Fenced" || nf.Metadata.DeletionTimestamp != nil {
		delete(c.fenced, nf.Metadata.Name)
		return
	}
	var blocks []netip.Prefix
	canon, _ := ParseCIDRs(nf.Spec.Cidrs)
	for _, b := range canon {
		if p, err := netip.ParsePrefix(b); err == nil {
			blocks = append(blocks, p)
		}
	}
	c.fenced[nf.Metadata.Name] = fencedBy{uid: nf.Metadata.UID, blocks: blocks}
}

// reportRefusals follows the storage's record of refused operations and reports each as a
// Kubernetes Event (reason ClientRefused) on the NetworkFence whose blocks hold the client:
// the storage's own word that it refused the fenced node, with the time it did.
func (c *fenceController) reportRefusals(ctx context.Context) {
	_, offset, err := c.store.RefusalsSince(0)
	if err != nil {
		log.Printf("fence controller: refusals: %v", err)
	}
	// Only what is refused from now on: earlier refusals were reported by an earlier process.
	for {
		time.Sleep(200 * time.Millisecond)
		var refusals []Refusal
		refusals, offset, err = c.store.RefusalsSince(offset)
		if err != nil {
			log.Printf("fence controller: refusals: %v", err)
			continue
		}
		for _, r := range refusals {
			addr, err := netip.ParseAddr(r.Addr)
			if err != nil {
				continue
			}
			c.mu.Lock()
			var name, uid string
			for n, f := range c.fenced {
				for _, b := range f.blocks {
					if b.Contains(addr) {
						name, uid = n, f.uid
					}
				}
			}
			c.mu.Unlock()
			if name == "" {
				continue
			}
			event := map[string]any{
				"apiVersion": "v1",
				"kind":       "Event",
				"metadata":   map[string]any{"generateName": name + ".", "namespace": "default"},
				"involvedObject": map[string]any{
					"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "NetworkFence", "name": name, "uid": uid,
				},
				"reason":         "ClientRefused",
				"message":        fmt.Sprintf("refused %s of node %s (%s) on volume %s at %s", r.Op, r.Node, r.Addr, r.Volume, r.At),
				"type":           "Normal",
				"source":         map[string]any{"component": "nodedown-csi-fence-controller"},
				"firstTimestamp": r.At,
				"lastTimestamp":  r.At,
				"count":          1,
			}
			if err := c.api.do(ctx, http.MethodPost, "/api/v1/namespaces/default/events", "application/json", event, nil); err != nil {
				log.Printf("fence controller: reporting a refusal on %s: %v", name, err)
				continue
			}
			log.Printf("fence controller: %s: the storage refused %s of node %s on volume %s at %s", name, r.Op, r.Node, r.Volume, r.At)
		}
	}
}

func (c *fenceController) setStatus(ctx context.Context, nf *networkFence, result, message string) {
	if nf.Status.Result == result && nf.Status.Message == message {
		return
	}
	patch := map[string]any{"status": map[string]any{"result": result, "message": message}}
	err := c.api.do(ctx, http.MethodPatch, fenceGroupVersion+"/networkfences/"+nf.Metadata.Name+"/status",
		"application/merge-patch+json", patch, nil)
	if err != nil {
		log.Printf("fence controller: %s: status: %v", nf.Metadata.Name, err)
		return
	}
	log.Printf("fence controller: %s: %s %v: %s (%s)", nf.Metadata.Name, nf.Spec.FenceState, nf.Spec.Cidrs, result, message)
}
