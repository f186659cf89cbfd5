// Command nodedown-k8s is one multi-call binary holding the Kubernetes components and etcd
// that the testenv node image needs. It dispatches on the name it was called by (argv[0], as
// through a symlink named kubelet) or, failing that, on its first argument
// (`nodedown-k8s kubelet --help`). Building everything as one program compiles the shared
// packages once and links once, which matters on a 2-core machine.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	_ "time/tzdata"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeadm "k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

var commands = map[string]func(){
	"kube-apiserver": func() { os.Exit(cli.Run(apiserver.NewAPIServerCommand())) },
	"kube-controller-manager": func() {
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	},
	"kube-scheduler": func() { os.Exit(cli.Run(scheduler.NewSchedulerCommand())) },
	"kube-proxy":     func() { os.Exit(cli.Run(proxy.NewProxyCommand())) },
	"kubelet":        func() { os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background()))) },
	"kubeadm":        func() { kubeadmerrors.HandleError(kubeadm.Run()) },
	"kubectl": func() {
		logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) //nolint:errcheck
		if err := cli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	},
	"etcd": func() { etcdmain.Main(os.Args) },
}

func main() {
	if run, ok := commands[filepath.Base(os.Args[0])]; ok {
		run()
		return
	}
	if len(os.Args) > 1 {
		if run, ok := commands[os.Args[1]]; ok {
			// Shift so the component sees its own name as argv[0].
			os.Args = os.Args[1:]
			run()
			return
		}
	}
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: %s COMMAND [ARGS...] (or call it through a symlink named COMMAND)\ncommands: %v\n", filepath.Base(os.Args[0]), names)
	os.Exit(2)
}
