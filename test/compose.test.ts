import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { parse } from "yaml"
import { OLDEST_SERVER_FOR_REPLICAS, releaseAtLeast } from "../src/config/nats.js"

/*
 * docker-compose.yml as Compose reads it (YAML with merge keys), checked by reading: no Docker engine
 * runs where Sluice is developed.
 */

interface Service {
  readonly image?: string
  readonly build?: string
  readonly profiles?: ReadonlyArray<string>
  readonly command?: ReadonlyArray<string>
  readonly environment?: Record<string, string>
  readonly ports?: ReadonlyArray<string>
  readonly volumes?: ReadonlyArray<string>
  readonly depends_on?: ReadonlyArray<string>
}

const root = join(import.meta.dirname, "..")
const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), { merge: true }) as {
  services: Record<string, Service>
  volumes: Record<string, unknown>
}
const readme = readFileSync(join(root, "README.md"), "utf8")
const inProfile = (profile: string) =>
  Object.entries(compose.services)
    .filter(([, s]) => s.profiles?.includes(profile))
    .map(([name]) => name)
    .sort()
const service = (name: string) => compose.services[name]!
const argAfter = (command: ReadonlyArray<string>, flag: string) => command[command.indexOf(flag) + 1]
const dataVolume = (s: Service) => s.volumes?.find((v) => v.endsWith(":/data"))?.split(":")[0]

describe("docker-compose.yml", () => {
  it("the observability profile holds Prometheus and Grafana only", () => {
    expect(inProfile("observability")).toEqual(["grafana", "prometheus"])
  })

  it("the observability profile's Prometheus finds its config and every rule file it names where they are mounted", () => {
    const prometheus = service("prometheus")
    const mounted = new Map(prometheus.volumes!.map((v) => [v.split(":")[1]!, v.split(":")[0]!]))
    const configPath = prometheus.command!.find((a) => a.startsWith("--config.file="))!.slice("--config.file=".length)
    expect(mounted.get(configPath)).toBe("./deploy/observability/prometheus.yml")
    const config = parse(readFileSync(join(root, "deploy/observability/prometheus.yml"), "utf8")) as { rule_files?: ReadonlyArray<string> }
    expect(config.rule_files).toEqual(["/etc/prometheus/alerts.yml"])
    for (const file of config.rule_files!) expect(mounted.get(file)).toBe("./deploy/observability/alerts.yml")
  })

  describe("the cluster profile", () => {
    const nodes = ["nats-1", "nats-2", "nats-3"]
    const instances = ["sluice-1", "sluice-2", "sluice-3"]

    it("holds three NATS nodes and three Sluice instances", () => {
      expect(inProfile("cluster")).toEqual([...nodes, ...instances].sort())
    })

    it(`runs every NATS node on a named release no older than ${OLDEST_SERVER_FOR_REPLICAS}, which replicas need`, () => {
      for (const name of nodes) {
        const tag = /^nats:(\d+\.\d+\.\d+)$/.exec(service(name).image ?? "")?.[1]
        expect(tag, `${name}: ${service(name).image}`).toBeDefined()
        expect(releaseAtLeast(tag!, OLDEST_SERVER_FOR_REPLICAS), `${name}: ${tag}`).toBe(true)
      }
    })

    it("routes every NATS node to the other two as one JetStream cluster, each with its own name and store", () => {
      for (const name of nodes) {
        const command = service(name).command!
        expect(command).toContain("-js")
        expect(argAfter(command, "-sd")).toBe("/data")
        expect(argAfter(command, "-n")).toBe(name)
        expect(argAfter(command, "--cluster_name")).toBe("sluice")
        expect(argAfter(command, "--cluster")).toBe("nats://0.0.0.0:6222")
        const routes = argAfter(command, "--routes")!.split(",").sort()
        expect(routes).toEqual(nodes.filter((n) => n !== name).map((n) => `nats://${n}:6222`))
      }
      const stores = nodes.map((n) => dataVolume(service(n)))
      expect(new Set(stores).size).toBe(3)
      for (const store of stores) expect(Object.keys(compose.volumes)).toContain(store)
    })

    it("gives every Sluice instance all three nodes, three replicas, its own id, data volume and port", () => {
      for (const name of instances) {
        const s = service(name)
        expect(s.build).toBe(".")
        const env = s.environment!
        expect(env.NATS_URL!.split(",")).toEqual(nodes.map((n) => `nats://${n}:4222`))
        expect(env.SLUICE_NATS_REPLICAS).toBe("3")
        expect(env.SLUICE_INSTANCE_ID).toBe(name)
        expect(env.SLUICE_MODELS).toBe("/app/examples/compose-models.json")
        expect([...s.depends_on!].sort()).toEqual([...nodes, "sim"])
        // Every variable is one the README documents.
        for (const variable of Object.keys(env)) expect(readme).toContain(`| \`${variable}\``)
      }
      const volumes = instances.map((n) => dataVolume(service(n)))
      expect(new Set(volumes).size).toBe(3)
      for (const volume of volumes) expect(Object.keys(compose.volumes)).toContain(volume)
      const hostPorts = instances.map((n) => service(n).ports!.map((p) => p.split(":")[0]))
      expect(hostPorts).toEqual([["8081"], ["8082"], ["8083"]])
      expect(instances.map((n) => service(n).ports![0]!.split(":")[1])).toEqual(["8080", "8080", "8080"])
    })
  })
})
