#!/bin/sh
# kubeadm's keys and certificates made with the openssl CLI, the peer figure for benchmarks/cli_startup.py.
#
# Usage: openssl_certs.sh DIR [certs|all] [ecdsa|rsa]
#   certs: what `kubeadm init phase certs all` writes (3 CAs, 7 leaf certificates, the sa key pair: 11 keys);
#   all (default): those plus the 5 client certificates kubeadm embeds in admin.conf, super-admin.conf,
#   controller-manager.conf, scheduler.conf and kubelet.conf (16 keys).
# Subjects, usages and SANs follow kubeadm's certificate table (node name node1, advertise address 127.0.10.1,
# service subnet 10.96.0.0/12, so the apiserver's service IP is 10.96.0.1). One openssl process per key and one
# per certificate, as a shell script written by hand would do it.
set -eu
dir=$1
set_=${2:-all}
alg=${3:-ecdsa}
node=node1
ip=127.0.10.1
mkdir -p "$dir/etcd"
cd "$dir"

key() {
	if [ "$alg" = rsa ]; then
		openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key"
	else
		openssl genpkey -quiet -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"
	fi
	chmod 600 "$1.key"
}

# ca BASE CN
ca() {
	key "$1"
	openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 3650 -out "$1.crt" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign" \
		-addext "subjectAltName=DNS:$2"
}

# leaf BASE CA SUBJECT EXTKEYUSAGE [SANS]
leaf() {
	key "$1"
	ext="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$4"
	if [ -n "${5:-}" ]; then
		ext="$ext
subjectAltName=$5"
	fi
	printf '%s\n' "$ext" >"$1.ext"
	openssl req -new -key "$1.key" -subj "$3" |
		openssl x509 -req -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 365 -extfile "$1.ext" \
			-out "$1.crt" 2>/dev/null
	rm -f "$1.ext"
}

ca ca kubernetes
leaf apiserver ca "/CN=kube-apiserver" serverAuth \
	"DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:$node,IP:10.96.0.1,IP:$ip"
leaf apiserver-kubelet-client ca "/O=kubeadm:cluster-admins/CN=kube-apiserver-kubelet-client" clientAuth
ca front-proxy-ca front-proxy-ca
leaf front-proxy-client front-proxy-ca "/CN=front-proxy-client" clientAuth
ca etcd/ca etcd-ca
leaf etcd/server etcd/ca "/CN=$node" serverAuth,clientAuth "DNS:localhost,DNS:$node,IP:$ip,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"
leaf etcd/peer etcd/ca "/CN=$node" serverAuth,clientAuth "DNS:localhost,DNS:$node,IP:$ip,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"
leaf etcd/healthcheck-client etcd/ca "/CN=kube-etcd-healthcheck-client" clientAuth
leaf apiserver-etcd-client etcd/ca "/CN=kube-apiserver-etcd-client" clientAuth
key sa
openssl pkey -in sa.key -pubout -out sa.pub

if [ "$set_" = all ]; then
	leaf admin ca "/O=kubeadm:cluster-admins/CN=kubernetes-admin" clientAuth
	leaf super-admin ca "/O=system:masters/CN=kubernetes-super-admin" clientAuth
	leaf controller-manager ca "/CN=system:kube-controller-manager" clientAuth
	leaf scheduler ca "/CN=system:kube-scheduler" clientAuth
	leaf kubelet ca "/O=system:nodes/CN=system:node:$node" clientAuth
fi
