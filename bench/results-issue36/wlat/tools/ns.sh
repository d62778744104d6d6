# source me: sets up lat9k namespaces
A=l9a; Bn=l9b
ip netns del $A 2>/dev/null; ip netns del $Bn 2>/dev/null
ip netns add $A; ip netns add $Bn
ip link add sv0 netns $A type veth peer name sv0 netns $Bn
ip -n $A addr add 10.233.9.1/24 dev sv0; ip -n $Bn addr add 10.233.9.2/24 dev sv0
for n in $A $Bn; do ip -n $n link set lo up; ip -n $n link set sv0 up; ip -n $n link set sv0 mtu ${MTU:-9000}; done
