/** One-line descriptions of the workload kinds and their spec and status, in our own words. */
export const WORKLOAD_DESCRIPTIONS: Readonly<Record<string, string>> = {
  "io.k8s.api.core.v1.Pod": "A group of containers run together on one node.",
  "io.k8s.api.core.v1.PodSpec": "What a pod runs and how: its containers, volumes and scheduling.",
  "io.k8s.api.core.v1.PodStatus":
    "What is known of a pod now: phase, conditions, IPs, container states.",
  "io.k8s.api.core.v1.PodTemplate": "A stored pod template.",
  "io.k8s.api.core.v1.PodTemplateSpec": "The metadata and spec of the pods made from a template.",
  "io.k8s.api.core.v1.Container": "One container of a pod.",
  "io.k8s.api.core.v1.Node": "A machine (real or simulated) that runs pods.",
  "io.k8s.api.core.v1.NodeSpec":
    "How a node is configured: pod CIDRs, taints, whether it is unschedulable.",
  "io.k8s.api.core.v1.NodeStatus":
    "What is known of a node now: conditions, capacity, addresses, info.",
  "io.k8s.api.core.v1.Service": "A stable name and address for a set of pods chosen by a selector.",
  "io.k8s.api.core.v1.ServiceSpec": "How a service is exposed: type, ports, selector, IPs.",
  "io.k8s.api.core.v1.ServiceStatus":
    "What is known of a service now: load balancer and conditions.",
  "io.k8s.api.core.v1.Endpoints":
    "The addresses that back a service (the older form of EndpointSlice).",
  "io.k8s.api.core.v1.Binding": "A request to bind a pod to a node.",
  "io.k8s.api.apps.v1.Deployment":
    "Declarative updates of a set of identical pods through ReplicaSets.",
  "io.k8s.api.apps.v1.DeploymentSpec": "The desired pods of a deployment and how to roll them out.",
  "io.k8s.api.apps.v1.DeploymentStatus":
    "What a deployment's controller last saw: replica counts and conditions.",
  "io.k8s.api.apps.v1.ReplicaSet": "Keeps a number of identical pods running.",
  "io.k8s.api.apps.v1.ReplicaSetSpec": "The desired number of pods, their selector and template.",
  "io.k8s.api.apps.v1.ReplicaSetStatus":
    "What a replica set's controller last saw: replica counts and conditions.",
  "io.k8s.api.apps.v1.ControllerRevision":
    "An immutable snapshot of state a controller can roll back to.",
  "io.k8s.api.batch.v1.Job": "Pods run until a number of them complete.",
  "io.k8s.api.batch.v1.JobSpec":
    "How many pods a job runs, at once and in all, and when it gives up.",
  "io.k8s.api.batch.v1.JobStatus":
    "What a job's controller last saw: counts, times and conditions.",
  "io.k8s.api.discovery.v1.EndpointSlice": "A slice of the endpoints that back a service.",
  "io.k8s.api.networking.v1.Ingress": "HTTP routes from outside the cluster to services.",
  "io.k8s.api.networking.v1.IngressSpec": "The rules, TLS and default backend of an ingress.",
  "io.k8s.api.networking.v1.IngressStatus": "What is known of an ingress now: its load balancer.",
  "io.k8s.api.networking.v1.IngressClass":
    "A kind of ingress and the controller that implements it.",
  "io.k8s.api.networking.v1.IngressClassSpec":
    "The controller of an ingress class and its parameters.",
  "io.k8s.api.policy.v1.PodDisruptionBudget":
    "A limit on how many pods of a set voluntary disruptions may take down at once.",
  "io.k8s.api.policy.v1.PodDisruptionBudgetSpec":
    "The pods covered and how many must stay available (or may be unavailable).",
  "io.k8s.api.policy.v1.PodDisruptionBudgetStatus":
    "What the disruption controller last saw: healthy pods and allowed disruptions.",
  "io.k8s.api.policy.v1.Eviction": "A request to evict a pod, subject to its disruption budgets.",
};
