{{- define "nodedown.pod" -}}
metadata:
  labels:
    app.kubernetes.io/name: nodedown
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  serviceAccountName: {{ .Release.Name }}
  restartPolicy: Never
  containers:
    - name: nodedown
      image: {{ required "image.repository is required: the reference `nodedown image export` prints, pushed where the nodes pull" .Values.image.repository }}:{{ required "image.tag is required" .Values.image.tag }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      command: [/usr/local/bin/nodedown]
      args:
        - run
        - /experiments
        - --context
        - in-cluster
        - --allow-context
        - in-cluster
        {{- range .Values.extraArgs }}
        - {{ . | quote }}
        {{- end }}
      workingDir: /results
      env:
        - name: NODEDOWN_RUNNER_NODE
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        - name: NODEDOWN_WORKLOAD_IMAGE
          value: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        {{- with .Values.metrics.pushgateway }}
        - name: NODEDOWN_PUSHGATEWAY
          value: {{ . | quote }}
        {{- end }}
        {{- with .Values.powerHooks.secretName }}
        - name: NODEDOWN_POWER_OFF
          valueFrom: {secretKeyRef: {name: {{ . }}, key: powerOff}}
        - name: NODEDOWN_POWER_ON
          valueFrom: {secretKeyRef: {name: {{ . }}, key: powerOn}}
        - name: NODEDOWN_POWER_STATE
          valueFrom: {secretKeyRef: {name: {{ . }}, key: powerState}}
        {{- end }}
      {{- with .Values.resources }}
      resources:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      volumeMounts:
        - {name: experiments, mountPath: /experiments, readOnly: true}
        - {name: results, mountPath: /results}
  volumes:
    - name: experiments
      configMap: {name: {{ .Release.Name }}-experiments}
    - name: results
      {{- if .Values.results.persistentVolumeClaim }}
      persistentVolumeClaim: {claimName: {{ .Values.results.persistentVolumeClaim }}}
      {{- else if .Values.results.hostPath }}
      hostPath: {path: {{ .Values.results.hostPath }}, type: DirectoryOrCreate}
      {{- else }}
      emptyDir: {}
      {{- end }}
{{- end -}}
