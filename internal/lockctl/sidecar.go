/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package lockctl

import (
	"errors"
	"io"
	"path"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redlease/redlease/internal/version"
)

// agentVolume is the emptyDir the agent's socket lives in, shared by the
// pod's containers and nobody else.
const agentVolume = "redlease-agent"

// agentSocketEnv tells the app where the socket is.
const agentSocketEnv = "REDLEASE_AGENT_SOCKET"

// imageUser is the user and group of redlease's images (hack/ocibuild).
const imageUser = 65532

func newSidecarCommand(stdout io.Writer) *cobra.Command {
	var (
		container string
		image     string
	)
	cmd := &cobra.Command{
		Use:   "sidecar --container NAME [--image IMAGE]",
		Short: "Print the patch that adds the lock agent to a workload as a native sidecar (kubectl patch --patch-file)",
		Long: `Print a strategic-merge patch of a pod template (a Deployment, StatefulSet,
Job or CronJob's jobTemplate after one more level) that runs 'lockctl agent'
as a native sidecar: an init container with restartPolicy Always, started
before the app and stopped after it, serving on a Unix socket in an
in-memory emptyDir that only this pod's containers mount. The app container
(--container) gets the volume and REDLEASE_AGENT_SOCKET.

The pod's fsGroup (65532, the image's group) lets a container running as
any user open the socket (mode 0660). The agent reads DistributedLocks and
their credentials Secrets through the pod's ServiceAccount: bind it to the
Role 'lockctl rbac' prints, nothing more. No admission webhook is involved.`,
		Example: `  lockctl sidecar --container worker > agent-patch.yaml
  kubectl patch deployment worker --patch-file agent-patch.yaml
  lockctl rbac nightly -n billing --service-account worker | kubectl apply -f -`,
		Args: usage(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			if container == "" {
				return exit(ExitUsage, errors.New("--container is required: the app container that talks to the agent"))
			}
			return printSidecar(stdout, container, image)
		},
	}
	cmd.Flags().StringVar(&container, "container", "", "the app container that talks to the agent (it gets the socket's volume)")
	cmd.Flags().StringVar(&image, "image", "ghcr.io/redlease/lockctl:"+version.Get().Version, "the lockctl image the agent runs from")
	return cmd
}

// printSidecar writes the patch as YAML.
func printSidecar(w io.Writer, container, image string) error {
	dir := path.Dir(DefaultAgentSocket)
	mount := corev1.VolumeMount{Name: agentVolume, MountPath: dir}
	agent := corev1.Container{
		Name:          "redlease-agent",
		Image:         image,
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Args:          []string{"agent", "--socket", DefaultAgentSocket, "--socket-mode", "0660"},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		},
		VolumeMounts: []corev1.VolumeMount{mount},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	app := corev1.Container{
		Name:         container,
		Env:          []corev1.EnvVar{{Name: agentSocketEnv, Value: DefaultAgentSocket}},
		VolumeMounts: []corev1.VolumeMount{mount},
	}
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"securityContext": corev1.PodSecurityContext{FSGroup: ptr.To[int64](imageUser)},
		"initContainers":  []corev1.Container{agent},
		"containers":      []corev1.Container{app},
		"volumes":         []corev1.Volume{{Name: agentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
	}}}}
	out, err := yaml.Marshal(patch)
	if err != nil {
		return err
	}
	printf(w, "# lockctl sidecar --container %s: kubectl patch <kind> <name> --patch-file FILE\n%s", container, out)
	return nil
}
